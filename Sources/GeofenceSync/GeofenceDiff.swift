import GeofenceGeometry

/// How a synced set differs from the set held before.
///
/// Categories, by id:
/// - **added**: in the new set only;
/// - **removed**: in the old set only;
/// - **geometry changed**: in both, with a different shape: centre or radius, a polygon's
///   geometry (any vertex), or a circle become a polygon or back (name and metadata may
///   have changed too);
/// - **metadata changed**: in both, the same shape (compared exactly, as stored),
///   different name or metadata text.
///
/// The counts are always set. The geofences themselves are listed only when the diff was built
/// with details (``includesDetails``); a sync of a very large set can skip them to keep memory
/// bounded. Lists are in ascending UTF-8 id order.
public struct GeofenceDiff: Hashable, Sendable {
  /// Number of geofences in each category.
  public struct Counts: Hashable, Sendable, CustomStringConvertible {
    public var added = 0
    public var removed = 0
    public var geometryChanged = 0
    public var metadataChanged = 0

    public init(
      added: Int = 0, removed: Int = 0, geometryChanged: Int = 0, metadataChanged: Int = 0
    ) {
      self.added = added
      self.removed = removed
      self.geometryChanged = geometryChanged
      self.metadataChanged = metadataChanged
    }

    /// Whether nothing changed.
    public var isEmpty: Bool {
      added == 0 && removed == 0 && geometryChanged == 0 && metadataChanged == 0
    }

    public var description: String {
      "added \(added), removed \(removed), geometry changed \(geometryChanged), "
        + "metadata changed \(metadataChanged)"
    }
  }

  public var counts = Counts()
  /// Whether the lists below are filled.
  public var includesDetails: Bool
  /// New geofences.
  public var added: [Geofence] = []
  /// Ids of removed geofences.
  public var removed: [String] = []
  /// The new form of each geofence whose shape changed (centre, radius or polygon geometry).
  public var geometryChanged: [Geofence] = []
  /// The new form of each geofence whose name or metadata changed (geometry unchanged).
  public var metadataChanged: [Geofence] = []

  /// An empty diff.
  public init(includesDetails: Bool = true) {
    self.includesDetails = includesDetails
  }

  /// Whether nothing changed.
  public var isEmpty: Bool { counts.isEmpty }

  /// The diff from `old` to `new`, with details.
  /// - Precondition: ids are unique within each array.
  /// - Complexity: O((n + m) log(n + m)) for n old and m new geofences (sorting ids).
  public init(from old: [Geofence], to new: [Geofence]) {
    self.includesDetails = true
    var oldByID: [String: Geofence] = [:]
    oldByID.reserveCapacity(old.count)
    for g in old { oldByID[g.id] = g }
    var newIDs = Set<String>()
    newIDs.reserveCapacity(new.count)
    for g in new {
      newIDs.insert(g.id)
      switch GeofenceDiff.category(old: oldByID[g.id], new: g) {
      case .added: added.append(g)
      case .geometryChanged: geometryChanged.append(g)
      case .metadataChanged: metadataChanged.append(g)
      case nil: break
      }
    }
    removed = old.map(\.id).filter { !newIDs.contains($0) }
    sortLists()
    counts = Counts(
      added: added.count, removed: removed.count, geometryChanged: geometryChanged.count,
      metadataChanged: metadataChanged.count)
  }

  /// The category of a change from `old` (nil when new) to `new`, or nil when identical.
  public static func category(old: Geofence?, new: Geofence) -> Category? {
    guard let old else { return .added }
    if old.shape != new.shape { return .geometryChanged }
    if old.name != new.name || old.metadataJSON != new.metadataJSON { return .metadataChanged }
    return nil
  }

  /// A change category of a geofence that is in the new set.
  public enum Category: Hashable, Sendable {
    case added, geometryChanged, metadataChanged
  }

  /// Counts one change; lists `geofence` when details are kept and it is given.
  mutating func record(_ category: Category, _ geofence: Geofence?) {
    switch category {
    case .added:
      counts.added += 1
      if includesDetails, let geofence { added.append(geofence) }
    case .geometryChanged:
      counts.geometryChanged += 1
      if includesDetails, let geofence { geometryChanged.append(geofence) }
    case .metadataChanged:
      counts.metadataChanged += 1
      if includesDetails, let geofence { metadataChanged.append(geofence) }
    }
  }

  mutating func recordRemoval(_ id: String) {
    counts.removed += 1
    if includesDetails { removed.append(id) }
  }

  mutating func sortLists() {
    let byID: (Geofence, Geofence) -> Bool = { $0.id.utf8.lexicographicallyPrecedes($1.id.utf8) }
    added.sort(by: byID)
    geometryChanged.sort(by: byID)
    metadataChanged.sort(by: byID)
    removed.sort { $0.utf8.lexicographicallyPrecedes($1.utf8) }
  }
}
