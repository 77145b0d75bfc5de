import GeofenceGeometry
import GeofenceIndex

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Chooses which geofences a phone's operating system should monitor when it can monitor only
/// a few, and says how to change the current registration into that choice.
///
/// iOS monitors at most 20 regions per app (Apple, Core Location, "Monitoring the user's
/// proximity to geographic regions"); Android at most 100 per app (Android developers, "Create
/// and monitor geofences"). The app's own regions come out of that budget, so the planner is
/// given the slots that are left.
///
/// ## The plan
///
/// - **Slot 1 is a refresh circle** centred on the device, registered under
///   ``refreshIdentifier``. Its radius guarantees that moving less than it from the planned
///   position cannot bring the device into a geofence that is not registered: it is the edge
///   distance of the nearest geofence not chosen, minus ``Configuration/marginMeters`` and the
///   fix's horizontal accuracy, clamped to [``Configuration/minimumRefreshRadiusMeters``,
///   ``Configuration/maximumRefreshRadiusMeters``]. When the lower clamp applies (the nearest
///   geofence not chosen is closer than the minimum plus the margin) the guarantee does not
///   hold; ``Plan/refreshGuaranteed`` says so. An EXIT from the refresh circle is the signal
///   to plan again. There is always a refresh circle, even when no geofence is near.
/// - **The other `budget − 1` slots** go to the geofences nearest by **edge distance**
///   (great-circle distance to the circle's edge, 0 inside), so a geofence the device is in
///   ranks first and is never evicted for one whose centre is nearer. Ties are broken by the
///   UTF-8 bytes of the id, then by slot (``RegionSet/precedes(_:_:)``). Only geofences whose
///   edge is within the largest refresh radius plus the margin and accuracy are candidates:
///   a farther one cannot be reached before the refresh circle's EXIT, so slots stay free
///   rather than hold it.
/// - **A diff, never a teardown.** The plan lists what to remove and what to add against the
///   registration the caller gives (the set the OS reports as monitored, so that a removal
///   that failed is tried again): geofences that stay are not touched. ``Plan/operations``
///   orders them so that the registration never exceeds the budget: removals first, then the
///   refresh circle (re-registering an identifier replaces the old region on both platforms),
///   then additions nearest first.
///
/// ## Cost
///
/// A plan looks at the grid cells within a search radius that starts at
/// ``Configuration/initialSearchMeters`` and doubles until it holds `budget` geofences or
/// passes the largest refresh radius plus the margin: only nearby cells (see
/// ``GridIndex/forEachCandidate(near:withinMeters:_:)``). Scratch buffers are reused between
/// plans. About 10 µs a plan at 1,000,000 geofences (`geofence bench --plan`).
public struct RegionBudgetPlanner: Sendable {
  /// The identifier of the refresh circle in a registration.
  public static let refreshIdentifier = "geofence.refresh"

  /// The planner's settings.
  public struct Configuration: Hashable, Sendable {
    /// Slots the planner may fill, the refresh circle included: at least 1. iOS allows 20
    /// regions per app and Android 100, less the regions the host app registers itself.
    public var budget: Int
    /// The smallest refresh radius in metres. Default 100: below about 100 m neither
    /// platform reports crossings reliably (Android developers, "Create and monitor
    /// geofences": "the minimum radius of the geofence should be set between 100 - 150
    /// meters"; Apple documents a system-defined cushion around every region).
    public var minimumRefreshRadiusMeters: Double
    /// The largest refresh radius in metres. Default 5,000: a larger circle rarely helps, as
    /// the OS reports its exit late (it checks coarse cell and Wi-Fi positions).
    public var maximumRefreshRadiusMeters: Double
    /// Subtracted from the nearest unchosen geofence's edge distance, in metres, beside the
    /// fix's horizontal accuracy. Default 50 (the OS's own boundary cushion is of that order).
    public var marginMeters: Double
    /// The first search radius in metres. Default 250: in a dense city set it already holds
    /// more than 100 geofences, so a plan sorts a few hundred candidates, not thousands.
    public var initialSearchMeters: Double

    /// - Precondition: `budget >= 1`, radii > 0 with minimum <= maximum, margin >= 0.
    public init(
      budget: Int, minimumRefreshRadiusMeters: Double = 100,
      maximumRefreshRadiusMeters: Double = 5_000, marginMeters: Double = 50,
      initialSearchMeters: Double = 250
    ) {
      precondition(budget >= 1, "the budget holds at least the refresh circle")
      precondition(
        minimumRefreshRadiusMeters > 0 && minimumRefreshRadiusMeters <= maximumRefreshRadiusMeters,
        "0 < minimum refresh radius <= maximum")
      precondition(marginMeters >= 0 && initialSearchMeters > 0, "margin >= 0, search > 0")
      self.budget = budget
      self.minimumRefreshRadiusMeters = minimumRefreshRadiusMeters
      self.maximumRefreshRadiusMeters = maximumRefreshRadiusMeters
      self.marginMeters = marginMeters
      self.initialSearchMeters = initialSearchMeters
    }
  }

  /// One step of changing the registration.
  public enum Operation: Hashable, Sendable {
    /// Stop monitoring the geofence with this id.
    case remove(String)
    /// Register the refresh circle (replacing the previous one).
    case registerRefresh(center: Coordinate, radiusMeters: Double)
    /// Start monitoring the geofence with this id.
    case add(String)
  }

  /// A plan: what to monitor and how to get there.
  public struct Plan: Hashable, Sendable {
    /// The refresh circle's centre (the planned position).
    public var refreshCenter: Coordinate
    /// The refresh circle's radius in metres.
    public var refreshRadiusMeters: Double
    /// False when the radius was raised to the minimum above what the nearest geofence not
    /// chosen allows: moving less than the radius could then enter that geofence.
    public var refreshGuaranteed: Bool
    /// The chosen geofences' slots, nearest edge first (at most `budget − 1`).
    public var slots: [Int32]
    /// Their ids, in the same order.
    public var ids: [String]
    /// Their edge distances in metres (0 inside), in the same order.
    public var edgeDistancesMeters: [Double]
    /// The edge distance in metres of the nearest geofence not chosen; +∞ when none lies
    /// within the search.
    public var nextEdgeDistanceMeters: Double
    /// Ids registered now that the plan drops, in the order given.
    public var removals: [String]
    /// Chosen ids not registered now, nearest first.
    public var additions: [String]
    /// The full change, in an order that never exceeds the budget: removals, the refresh
    /// circle, additions.
    public var operations: [Operation] {
      removals.map(Operation.remove)
        + [.registerRefresh(center: refreshCenter, radiusMeters: refreshRadiusMeters)]
        + additions.map(Operation.add)
    }
    /// The registration after the plan: the refresh identifier first, then ``ids``.
    public var registration: [String] { [RegionBudgetPlanner.refreshIdentifier] + ids }
  }

  /// The geofences planned over.
  public let set: RegionSet
  /// The settings.
  public let configuration: Configuration
  private var scratch: [Candidate] = []
  /// Slots already given during one search (``SlotStamps``).
  private var given = SlotStamps()
  /// The search radius that sufficed at the previous plan: the next starts at half of it.
  private var lastSearch: Double? = nil

  private struct Candidate {
    var distance: Double
    var slot: Int32
  }

  /// - Parameters:
  ///   - set: the full set (up to millions of geofences), held in its grid index.
  ///   - configuration: the budget and radii.
  public init(set: RegionSet, configuration: Configuration) {
    self.set = set
    self.configuration = configuration
  }

  /// Plans the registration for a device at `position`.
  ///
  /// - Parameters:
  ///   - position: the device's position (WGS84 degrees).
  ///   - accuracyMeters: its horizontal accuracy in metres (`nil` or negative: 0); it shrinks
  ///     the refresh circle, since the device may be that far from `position`.
  ///   - registered: the ids the OS monitors now (the refresh identifier among them or not;
  ///     unknown ids are removed).
  /// - Returns: the plan; deterministic for the same inputs.
  /// - Complexity: O(c + k log k) for the c grid cells and k geofences within the final search
  ///   radius, plus O(r) for r registered ids.
  public mutating func plan(
    position: Coordinate, accuracyMeters: Double?, registered: [String]
  ) -> Plan {
    let wanted = configuration.budget - 1
    let accuracy = max(0, accuracyMeters ?? 0).isFinite ? max(0, accuracyMeters ?? 0) : 0
    let reserve = configuration.marginMeters + accuracy
    // Past this search radius the nearest unchosen geofence no longer limits the refresh
    // circle: it is clamped to the maximum anyway.
    let enough = configuration.maximumRefreshRadiusMeters + reserve
    // Nearby plans need about the same radius: start at half the last one (the answer does
    // not depend on where the search starts, only on where it stops).
    var search = max(
      configuration.initialSearchMeters / 8,
      lastSearch.map { $0 / 2 } ?? configuration.initialSearchMeters)
    let vector = UnitVector(position)
    while true {
      scratch.removeAll(keepingCapacity: true)
      given.reset(expecting: 4 * (wanted + 1) + 64)
      // Geofences whose edge is farther than `enough` are left out even when slots are free:
      // the device cannot reach one before it leaves the largest refresh circle.
      let radius = min(search, enough)
      set.index.forEachCandidate(near: position, withinMeters: radius) { slot in
        // A region filed in several cells is given once per cell.
        guard given.insert(slot) else { return }
        let d = Self.edgeDistance(from: vector, to: set.region(at: slot))
        if d <= radius { scratch.append(Candidate(distance: d, slot: slot)) }
      }
      if scratch.count > wanted || search >= enough || search >= EarthModel.halfCircumferenceMeters
      {
        break
      }
      search = min(search * 2, max(enough, EarthModel.halfCircumferenceMeters))
    }
    lastSearch = search
    // Only the first `wanted + 1` matter: keep those no farther than the (wanted + 1)-th
    // smallest distance (ties included), then sort them by distance and id.
    if scratch.count > 2 * (wanted + 1) + 16 {
      let cut = Self.select(&scratch, rank: wanted)
      var kept = 0
      for k in scratch.indices where scratch[k].distance <= cut {
        scratch.swapAt(kept, k)
        kept += 1
      }
      scratch.removeLast(scratch.count - kept)
    }
    scratch.sort { a, b in
      a.distance != b.distance ? a.distance < b.distance : set.precedes(a.slot, b.slot)
    }
    let chosen = scratch.prefix(wanted)
    let next = scratch.count > wanted ? scratch[wanted].distance : Double.infinity
    let allowed = next - reserve
    let radius = min(
      configuration.maximumRefreshRadiusMeters,
      max(configuration.minimumRefreshRadiusMeters, allowed))
    let ids = chosen.map { set.id(at: $0.slot) }
    let chosenIDs = Set(ids)
    let registeredIDs = Set(registered)
    var seen = Set<String>()
    let removals = registered.filter {
      $0 != Self.refreshIdentifier && !chosenIDs.contains($0) && seen.insert($0).inserted
    }
    return Plan(
      refreshCenter: position, refreshRadiusMeters: radius,
      refreshGuaranteed: allowed >= configuration.minimumRefreshRadiusMeters,
      slots: chosen.map(\.slot), ids: ids, edgeDistancesMeters: chosen.map(\.distance),
      nextEdgeDistanceMeters: next, removals: removals,
      additions: ids.filter { !registeredIDs.contains($0) })
  }

  /// Great-circle distance in metres from `point` (a unit vector) to the edge of `region`,
  /// 0 inside: the central angle `2 asin(c / 2)` from the chord `c` between the unit vectors
  /// (well conditioned below about 179°), times ``EarthModel/meanRadiusMeters``, minus the
  /// radius. Agrees with ``haversineDistance(_:_:)`` to about 1e-9 m at city distances.
  @inlinable
  public static func edgeDistance(from point: UnitVector, to region: CircularRegion) -> Double {
    let chord = point.chordSquared(to: region.centerVector).squareRoot()
    let angle = 2 * asin(min(1, chord / 2))
    return max(0, EarthModel.meters(fromRadians: angle) - region.radiusMeters)
  }

  /// The distance of rank `rank` (0-based) in `candidates`, reordering them (Hoare's
  /// quickselect with a middle pivot; expected O(n)).
  private static func select(_ candidates: inout [Candidate], rank: Int) -> Double {
    var low = 0
    var high = candidates.count - 1
    while low < high {
      let pivot = candidates[(low + high) / 2].distance
      var i = low
      var j = high
      while i <= j {
        while candidates[i].distance < pivot { i += 1 }
        while candidates[j].distance > pivot { j -= 1 }
        if i <= j {
          candidates.swapAt(i, j)
          i += 1
          j -= 1
        }
      }
      if rank <= j {
        high = j
      } else if rank >= i {
        low = i
      } else {
        return candidates[rank].distance
      }
    }
    return candidates[rank].distance
  }
}

/// A set of slots for one search, cleared in O(1): open addressing over a power-of-two table
/// whose entries carry the generation they were written in.
struct SlotStamps: Sendable {
  private var slots: [Int32] = []
  private var stamps: [UInt32] = []
  private var generation: UInt32 = 0
  private var count = 0

  /// Empties the set, sized for about `expected` slots (it grows past them).
  mutating func reset(expecting expected: Int) {
    generation &+= 1
    count = 0
    var capacity = 64
    while capacity < 2 * expected { capacity *= 2 }
    if slots.count < capacity || generation == 0 {
      slots = Array(repeating: 0, count: max(capacity, slots.count))
      stamps = Array(repeating: 0, count: slots.count)
      generation = 1
    }
  }

  /// Inserts `slot`; false when it was already in.
  mutating func insert(_ slot: Int32) -> Bool {
    if 2 * (count + 1) > slots.count { grow() }
    let mask = slots.count - 1
    var h = Int(truncatingIfNeeded: UInt32(bitPattern: slot) &* 0x9E37_79B9) & mask
    while stamps[h] == generation {
      if slots[h] == slot { return false }
      h = (h + 1) & mask
    }
    stamps[h] = generation
    slots[h] = slot
    count += 1
    return true
  }

  private mutating func grow() {
    let old = zip(slots, stamps).filter { $0.1 == generation }.map(\.0)
    slots = Array(repeating: 0, count: slots.count * 2)
    stamps = Array(repeating: 0, count: slots.count)
    generation = 1
    count = 0
    for s in old { _ = insert(s) }
  }
}
