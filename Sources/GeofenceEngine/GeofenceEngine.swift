import EventOutbox
import Foundation
import GeofenceDefinitions
import GeofenceGeometry
import GeofenceIndex
import GeofenceSync
import GeofenceTransitions
import JSONText
import LocationAuthorization
import Networking
import RetryTiming

/// The geofencing engine that an app, a server or the command-line tool owns: fixes in,
/// ENTER / EXIT / DWELL ``GeofenceEvent``s out, over one live geofence set that sync keeps up
/// to date, behind the authorization gate, optionally into a durable outbox.
///
/// ```swift
/// let engine = try GeofenceEngine(
///   configuration: .init(sync: SyncConfiguration(baseURL: server, apiKey: key)),
///   storage: .directory("/var/lib/app/geofence"))
/// try await engine.sync()
/// for event in try engine.ingest(fix, device: "phone-1") { print(event.type, event.geofenceID) }
/// let report = try await engine.flush()
/// ```
///
/// ## Isolation
/// A class with a **single owner**: not `Sendable`; call it from one isolation domain at a
/// time (one thread, one actor, or one task). Put it inside an actor of your own to share it,
/// or keep it on the main actor. Its async methods are `nonisolated(nonsending)` (SE-0461):
/// they run on the caller's actor, so an actor that owns the engine awaits them with no
/// sending. At each `await` inside them (a request, a retry wait) the owner's actor may run
/// other work: ingesting meanwhile is fine; a second delivery or sync started meanwhile is
/// refused (``EngineError/storeInUse(_:)``; ``deliverDue(until:skipping:)`` and
/// ``sendDueBatches(until:)`` instead return an empty report, the running delivery sending
/// what is due).
///
/// ## Live semantics
/// ``ingest(_:device:)`` takes each device's fixes in the order they arrive and never
/// reorders. Many devices may be interleaved; each has its own gate and detector. A fix at or
/// before the time of the latest fix the engine took for its device is dropped: earlier as
/// ``GeofenceTransitions/DropReason/staleFix``, at the same time as
/// ``GeofenceTransitions/DropReason/duplicateFix`` (same position) or
/// ``GeofenceTransitions/DropReason/conflictingTimestamp``. Fixes without a finite time are
/// dropped as ``GeofenceTransitions/DropReason/missingTime`` (``replay(_:file:)`` handles whole
/// tracks without times).
///
/// ## Event ids
/// ``OutboxEventID/derive(_:prefix:)`` over (geofence id, geofence lifetime, type, fix time in
/// whole milliseconds or `#` and the fix's index for a track without times, device): the same
/// transition computed again has the same id, which the outbox and the server store once. An
/// inferred ENTER or EXIT (``CrossingInference``) uses its interpolated time followed by `~`:
/// stable (the interpolation depends only on the two fixes and the region), and never the id
/// of an event at a fix.
///
/// ## Storage
/// ``Storage/directory(_:)`` keeps `geofences.sqlite` (the synced set), `outbox.sqlite` (when
/// an outbox is configured), `state.sqlite` (device checkpoints, the authorization state and
/// the outbox's account) and `identity.json` (with ``IdentityMode/persisted``).
/// ``Storage/inMemory`` keeps everything in memory.
///
/// ## Snapshots
/// A directory store also keeps `geofences.snapshot`: the synced set already indexed, as the
/// bytes of its tables (see `BinarySnapshot`), so that an engine starts on a large set by
/// copying them instead of reading every row and building the index (1M geofences: see
/// `tools/bench/README.md`). It records the store's identity (a random id of the store file
/// and the set's generation, which every change of the set increments), the format version,
/// each table's element size, and a checksum. An engine created on the directory uses it
/// only when all of these match; otherwise (none yet, stale after a sync, damaged, written by
/// a build of another layout) it reads the rows, builds the set, and writes a new snapshot.
/// ``setSource`` says which happened. `geofence sync` writes it after a sync, and
/// ``writeSnapshot()`` (`geofence snapshot`) on demand. A live ``sync()`` does not: the next
/// engine rebuilds it once.
///
/// ## Delivery
/// Events go from the outbox to every destination: the server's batch API (``Configuration/upload``),
/// ``Configuration/destinations`` (webhook, JSON Lines file, standard output) and any
/// ``EventOutbox/EventDestination`` given to ``add(destination:stages:)``, each from its own
/// cursor, through its ``EventOutbox/DeliveryStages``. ``deliver(until:skipping:)`` is the
/// explicit flush; ``deliverDue(until:skipping:)`` applies the ``Configuration/flushPolicy``.
///
/// ## Configured once
/// An engine's configuration is fixed when it is created. In one process, one engine that
/// delivers (an upload or a destination configured) may be configured per store directory:
/// a second one while the first lives is an error (``EngineError/invalidConfiguration(_:)``),
/// not a no-op, because two engines moving the same cursors would send events twice and
/// interleave the session counts. The claim ends when the engine is released. Engines that
/// only read or fill the store may be opened beside it.
///
/// ## Checkpoints
/// Device state (gate and detector) is saved to `state.sqlite` by ``checkpoint()``, and
/// after every ``ingest(_:device:)`` with ``CheckpointPolicy/everyFix``. A restarted engine
/// on the same store continues each device where its last checkpoint left it.
public final class GeofenceEngine {
  /// Where the engine keeps its files.
  public enum Storage: Hashable, Sendable {
    /// Nothing survives the engine.
    case inMemory
    /// A folder, created when missing.
    case directory(String)
  }

  /// Whose events these are.
  public enum IdentityMode: Hashable, Sendable {
    /// No user identity: events carry the device id, and ``identify(user:)`` only.
    case none
    /// An installation identity kept in `identity.json` (needs ``Storage/directory(_:)``): a
    /// persisted anonymous id until ``identify(user:)``, a new one after ``reset()``.
    case persisted
  }

  /// When device state is written to `state.sqlite`.
  public enum CheckpointPolicy: Hashable, Sendable {
    /// Only when ``checkpoint()`` is called (and by ``flush()``).
    case manual
    /// After every ``ingest(_:device:)`` that changed the device (one SQLite transaction).
    case everyFix
    /// Never: device state is neither saved nor restored (a directory store then holds only
    /// the set and the outbox).
    case none
  }

  /// Where events are uploaded.
  public struct UploadConfiguration: Sendable {
    /// The server's base URL (events go to `POST {server}/v1/events`).
    public var server: URL
    /// The API key (`Authorization: Bearer KEY`); its fingerprint binds the outbox.
    public var apiKey: String
    /// Seconds before one request without an answer fails. Default 10.
    public var timeoutSeconds: Double
    /// Attempts and backoff. Default ``RetryTiming/RetryPolicy/init()``'s (8 sends, 1–60 s).
    public var retry: RetryPolicy
    /// The bound on one ``GeofenceEngine/flush(until:)`` or
    /// ``GeofenceEngine/sendDueBatches(until:)`` given no deadline of its own, seconds (> 0):
    /// no request starts and no wait begins later, the events staying queued
    /// (`UploadStop.deadlinePassed`). Default 300.
    public var deadlineSeconds: Double

    public init(
      server: URL, apiKey: String, timeoutSeconds: Double = 10, retry: RetryPolicy = RetryPolicy(),
      deadlineSeconds: Double = 300
    ) {
      self.server = server
      self.apiKey = apiKey
      self.timeoutSeconds = timeoutSeconds
      self.retry = retry
      self.deadlineSeconds = deadlineSeconds
    }
  }

  /// How the engine runs. Every field has a default.
  public struct Configuration: Sendable {
    /// The detector's rules. Default ``GeofenceTransitions/TransitionConfiguration/init()``.
    public var transitions: TransitionConfiguration
    /// Which grants allow monitoring. Default ``LocationAuthorization/AuthorizationPolicy/default``.
    public var authorization: AuthorizationPolicy
    /// The authorization state of a new store. Default ``AuthorizationTimeline/granted``
    /// (always, full accuracy, consent on, registered). A store keeps the last state set.
    public var initialAuthorization: AuthorizationState
    /// The outbox, or `nil` for none (events are only returned). Default `nil`.
    public var outbox: OutboxConfiguration?
    /// Where ``flush()`` uploads, or `nil`. Default `nil`.
    public var upload: UploadConfiguration?
    /// Where ``sync()`` fetches the set, or `nil`. Default `nil`.
    public var sync: SyncConfiguration?
    /// Default ``IdentityMode/none``.
    public var identity: IdentityMode
    /// Emit an EXIT, flagged ``GeofenceEvent/isRemoval``, for each device inside a geofence
    /// that a sync removes. Default false: the visit ends silently.
    public var emitsExitForRemovedGeofences: Bool
    /// Default ``CheckpointPolicy/everyFix`` for a directory, irrelevant in memory.
    public var checkpoints: CheckpointPolicy
    /// Destinations beside the server's batch API (which ``upload`` configures), each with
    /// its own cursor in the outbox. Default none. Needs an outbox.
    public var destinations: [DestinationConfiguration]
    /// When ``deliverDue(until:skipping:)`` delivers without an explicit flush. Default
    /// ``EventOutbox/FlushPolicy/init(count:intervalSeconds:debounceSeconds:immediateOnTransition:onBackground:)``'s
    /// (count 20, interval 30 s, on background).
    public var flushPolicy: FlushPolicy
    /// Sessions stamped on each event, or `nil` (the default) for none: events then carry no
    /// session members, and outputs stay as they were.
    public var sessions: SessionConfiguration?
    /// Whether this engine delivers. Default true. False for an engine that only fills the
    /// outbox for another process to deliver (`geofence run --no-upload` beside
    /// `geofence upload`): ``upload`` and ``destinations`` still register their cursors, so
    /// that the events queued now wait for each of them, but the engine never takes
    /// `delivery.lock` and its delivery calls throw ``EngineError/invalidConfiguration(_:)``.
    public var delivers: Bool = true
    /// The API key of the account the events belong to when neither ``upload`` nor ``sync``
    /// names one (an app that delivers elsewhere now and uploads later). The outbox is bound
    /// to it when the engine is created, before any destination is registered: while events
    /// of another key are queued, creating the engine throws
    /// ``EngineError/accountMismatch(stored:given:)``. Default `nil`.
    public var accountKey: String?

    public init(
      transitions: TransitionConfiguration = TransitionConfiguration(),
      authorization: AuthorizationPolicy = .default,
      initialAuthorization: AuthorizationState = AuthorizationTimeline.granted,
      outbox: OutboxConfiguration? = nil, upload: UploadConfiguration? = nil,
      sync: SyncConfiguration? = nil, identity: IdentityMode = .none,
      emitsExitForRemovedGeofences: Bool = false, checkpoints: CheckpointPolicy = .everyFix,
      destinations: [DestinationConfiguration] = [], flushPolicy: FlushPolicy = FlushPolicy(),
      sessions: SessionConfiguration? = nil, accountKey: String? = nil
    ) {
      self.accountKey = accountKey
      self.destinations = destinations
      self.flushPolicy = flushPolicy
      self.sessions = sessions
      self.transitions = transitions
      self.authorization = authorization
      self.initialAuthorization = initialAuthorization
      self.outbox = outbox
      self.upload = upload
      self.sync = sync
      self.identity = identity
      self.emitsExitForRemovedGeofences = emitsExitForRemovedGeofences
      self.checkpoints = checkpoints
    }
  }

  /// One device as the engine holds it.
  struct Device {
    var gate: MonitoringGate
    var lastSeenTime: Double?
    var lastSeenCoordinate: Coordinate?
    var dirty = false
    /// The engine's ``useCount`` when the device last got a fix (or was loaded), for
    /// ``evictCleanDevices(keepingAtMost:)``.
    var lastUse: UInt64 = 0

    /// The engine's order check for a timed fix of this device (it never reorders, relative
    /// to every fix taken, not only accepted ones): a fix before the last one is stale, one
    /// at the same time is a duplicate (same place) or a conflict (elsewhere). Otherwise the
    /// fix's time and place become the last ones, and the result is nil. A fix without a
    /// finite time passes unrecorded.
    mutating func checkOrder(of fix: LocationFix) -> DropReason? {
      guard let t = fix.time, t.isFinite else { return nil }
      if let last = lastSeenTime {
        if t < last { return .staleFix }
        if t == last {
          return lastSeenCoordinate == fix.coordinate ? .duplicateFix : .conflictingTimestamp
        }
      }
      lastSeenTime = t
      lastSeenCoordinate = fix.coordinate
      return nil
    }
  }

  public let configuration: Configuration
  public let storage: Storage
  /// The outbox, when configured.
  public let outbox: Outbox?
  /// The persisted geofence set (synced, or the one given at creation).
  public let geofenceStore: GeofenceStore
  let stateStore: DeviceStateStore
  let identityFile: MonitoringIdentity?
  let clock: any EngineClock
  let transport: any HTTPTransport
  /// Whether the set comes from ``init``'s `geofences` (``sync()`` is then refused).
  let hasFixedSet: Bool
  /// Where the live set came from at creation: the given geofences, the store's snapshot or
  /// the store's rows (see "Snapshots" above).
  public let setSource: GeofenceSetSource
  /// The live set. Whatever changes it must also empty ``geofenceText`` (an observer here
  /// would make every read of a slot copy the whole set).
  var live: LiveGeofenceSet
  /// The stored set's generation (``GeofenceSync/GeofenceStore/setIdentity()``) that ``live``
  /// was loaded or last synced at, for a synced set in a directory store; nil otherwise. A
  /// sync that finds another generation in the store (another process synced it) first brings
  /// the live set to the stored one (see ``sync(full:)``).
  var liveGeneration: Int64?
  /// Each slot's geofence members as the encoder writes them, made at the slot's first event
  /// of ``ingest(_:device:encoder:into:)``; emptied when ``live`` changes.
  var geofenceText = SlotGeofenceText()
  /// The devices in memory, by the bytes of their ids (``DeviceKey``), as the state store
  /// keys them.
  var devices: [DeviceKey: Device] = [:]
  /// Counts device uses (fixes, loads): each device's ``Device/lastUse`` orders eviction.
  var useCount: UInt64 = 0
  var userIDInMemory: String?
  /// The current authorization state.
  public internal(set) var authorization: AuthorizationState
  /// Counts since the engine was created.
  public internal(set) var report = EngineReport()
  var gated: [GatedEvent] = []
  /// The detectors' index query buffer, lent to the device taking a fix
  /// (``GeofenceTransitions/TransitionDetector/exchangeQueryBuffer(_:)``): one for the
  /// engine instead of one per device, each as long as the longest cell list it met.
  var queryBuffer = SlotBuffer()
  /// The destinations beside the server, in the order configured, then added.
  var deliveries: [DestinationDelivery] = []
  /// The stages of the server's batch API.
  var serverStages = DeliveryStages.none
  /// Set by a trigger (a transition, the app going to the background) that makes every
  /// destination due at the next ``deliverDue(until:skipping:)``.
  var flushRequested = false
  /// The current session, when sessions are kept.
  var session: SessionState?
  /// A delivery (``deliver(until:skipping:)``, ``deliverDue(until:skipping:)``,
  /// ``flush(until:)``, ``sendDueBatches(until:)``) is awaiting on the owner's actor: another
  /// one started meanwhile (reentrancy at an `await`) would send the same events twice.
  var deliveryInProgress = false
  /// A ``sync(full:)`` is awaiting on the owner's actor (the same for two syncs).
  var syncInProgress = false
  /// The directory claimed in ``ConfiguredStores`` for delivery, released in `deinit`.
  var claimedDirectory: String?
  /// The shared `store.lock` of a directory store (``DirectoryLock``), released with the
  /// engine.
  var storeLock: DirectoryLock?
  /// The exclusive `delivery.lock` of an engine that delivers (see ``claimStore()``).
  var deliveryLock: DirectoryLock?
  /// The exclusive `state.lock` of an engine that fills a directory store (see
  /// ``claimState()``); nil until it takes its first fix.
  var stateLock: DirectoryLock?
  /// ``claimState()`` succeeded, or has nothing to claim (in memory, nothing stored).
  var stateClaimed = false

  /// Creates an engine, restoring what `storage` holds.
  ///
  /// - Parameters:
  ///   - configuration: see ``Configuration``.
  ///   - storage: see ``Storage``.
  ///   - geofences: a fixed set to monitor (from files, say); `nil` to monitor the stored,
  ///     synced set (empty until the first ``sync()``). Ids must be unique.
  ///   - transport: the one HTTP seam, for sync and upload. Default ``URLSessionTransport``.
  ///   - clock: the one clock (processing times, batch intervals, waits). Default the wall clock.
  /// - Throws: ``EngineError/store(_:)`` when a file cannot be opened or created,
  ///   ``EngineError/invalidConfiguration(_:)`` for ``IdentityMode/persisted`` in memory, for
  ///   an empty store directory path, for an upload or sync API key that cannot be sent in a
  ///   header (`Networking.APIKey.problem(_:)`: empty, blanks only, a control character such
  ///   as CR or LF, a blank at either end), or for a geofence of `geofences` that no file or
  ///   sync answer could give (see ``problem(of:)``), or two with one id.
  /// - Complexity: O(n) for n geofences (loading and indexing the set), plus the metadata's
  ///   length (each is parsed once).
  public convenience init(
    configuration: Configuration = Configuration(), storage: Storage = .inMemory,
    geofences: [Geofence]? = nil, transport: any HTTPTransport = URLSessionTransport(),
    clock: any EngineClock = SystemClock()
  ) throws(EngineError) {
    if let geofences {
      var seen = Set<String>()
      for g in geofences {
        if let problem = Self.problem(of: g) {
          throw .invalidConfiguration("geofence \(JSONText.quoted(g.id)): \(problem)")
        }
        if !seen.insert(g.id).inserted {
          throw .invalidConfiguration("geofence id \(JSONText.quoted(g.id)) is given twice")
        }
      }
    }
    try self.init(
      configuration: configuration, storage: storage,
      columns: geofences.map { GeofenceColumns(geofences: $0) }, transport: transport,
      clock: clock)
  }

  /// Creates an engine monitoring the geofences of a load, as
  /// ``init(configuration:storage:geofences:transport:clock:)`` does for the same geofences
  /// given as an array. The load's columns become the live set as they are (ids, circles and
  /// id lookup are kept, not copied), so a large set is never held twice: pass the load with
  /// `consume` and keep no other copy of it.
  /// - Parameter loaded: the geofences of ``GeofenceDefinitions/GeofenceFileReader``, ids
  ///   unique (its rejections and locations are not kept); `nil` to monitor the stored set.
  /// - Throws: see ``init(configuration:storage:geofences:transport:clock:)``.
  /// - Complexity: O(n) for n geofences (indexing the set).
  public convenience init(
    configuration: Configuration = Configuration(), storage: Storage = .inMemory,
    loaded: consuming GeofenceLoadResult?,
    transport: any HTTPTransport = URLSessionTransport(), clock: any EngineClock = SystemClock()
  ) throws(EngineError) {
    let columns = loaded?.columns
    _ = consume loaded
    try self.init(
      configuration: configuration, storage: storage, columns: columns, transport: transport,
      clock: clock)
  }

  init(
    configuration: Configuration, storage: Storage, columns: consuming GeofenceColumns?,
    transport: any HTTPTransport, clock: any EngineClock
  ) throws(EngineError) {
    self.configuration = configuration
    self.storage = storage
    self.clock = clock
    self.transport = transport
    // A key that cannot travel in a header (a CR or LF makes URLSession drop the header, and
    // the request would go out without Authorization) is refused before anything is opened.
    for (what, key) in [
      ("upload", configuration.upload?.apiKey), ("sync", configuration.sync?.apiKey),
    ] {
      guard let key else { continue }
      if key.isEmpty { throw EngineError.invalidConfiguration("\(what): the API key is empty") }
      if let problem = APIKey.problem(key) {
        throw EngineError.invalidConfiguration("\(what): \(problem)")
      }
    }
    // An empty path would put the store's files in the working directory.
    if case .directory(let d) = storage, d.isEmpty {
      throw EngineError.invalidConfiguration("the store directory path is empty")
    }
    func path(_ name: String) -> String {
      switch storage {
      case .inMemory: return ":memory:"
      case .directory(let d): return URL(fileURLWithPath: d).appendingPathComponent(name).path
      }
    }
    do {
      if case .directory(let d) = storage {
        try Self.makeStoreDirectory(d)
        // Held shared while the engine lives: repair (exclusive) waits for no engine.
        do {
          storeLock = try DirectoryLock(
            directory: d, fileName: DirectoryLock.storeFileName, exclusive: false)
        } catch {
          switch error {
          case .held:
            throw EngineError.storeInUse(
              "\(d) is being repaired (geofence repair holds \(DirectoryLock.storeFileName)); "
                + "open it again when the repair is done")
          case .unavailable: throw EngineError.store("\(error)")
          }
        }
      }
      // A fixed set is not stored: geofences.sqlite belongs to sync, and a directory that
      // only checkpoints devices should not gain an empty synced set.
      geofenceStore =
        storage == .inMemory || columns != nil
        ? try GeofenceStore.inMemory() : try GeofenceStore(path: path("geofences.sqlite"))
      stateStore = try DeviceStateStore(path: path("state.sqlite"))
      outbox = try configuration.outbox.map {
        try Outbox(path: path("outbox.sqlite"), configuration: $0, clock: clock)
      }
      switch (configuration.identity, storage) {
      case (.none, _): identityFile = nil
      case (.persisted, .inMemory):
        throw EngineError.invalidConfiguration("a persisted identity needs a directory store")
      case (.persisted, .directory(let d)):
        identityFile = try MonitoringIdentity(
          fileURL: URL(fileURLWithPath: d).appendingPathComponent("identity.json"))
      }
      authorization =
        try stateStore.value(AuthorizationState.self, key: "authorization")
        ?? configuration.initialAuthorization
      userIDInMemory = try stateStore.value(String.self, key: "user_id")
      if let columns {
        hasFixedSet = true
        live = LiveGeofenceSet(columns: columns)
        setSource = .given
      } else if case .directory(let d) = storage {
        hasFixedSet = false
        // The generation is read before the set: a sync by another process in between only
        // makes the next sync compare the sets once more.
        liveGeneration = try geofenceStore.setIdentity().generation
        (live, setSource) = try Self.openStoredSet(geofenceStore, directory: d)
      } else {
        hasFixedSet = false
        live = LiveGeofenceSet(geofences: try geofenceStore.geofences())
        setSource = .store(reason: "in memory", wroteSnapshot: false)
      }
    } catch let error as EngineError {
      throw error
    } catch {
      throw .store("\(error)")
    }
    // The events' account: the upload's, else the sync's (whose geofences they come from).
    if outbox != nil,
      let key = configuration.upload?.apiKey ?? configuration.sync?.apiKey
        ?? configuration.accountKey
    {
      try bindOutboxAccount(key: key)
    }
    try setUpDelivery()
    if configuration.authorization.decide(authorization).mustDeleteQueuedEvents, let outbox {
      do { report.deletedForConsent += try outbox.deleteAll() } catch {
        throw .store("\(error)")
      }
    }
  }

  deinit {
    if let claimedDirectory { ConfiguredStores.release(claimedDirectory) }
  }

  /// Why `geofence` cannot be monitored, or nil: what the definition readers and the sync
  /// client refuse in a definition, checked for a geofence made in code. Its id is empty,
  /// reserved (``GeofenceDefinitions/GeofenceValidator/reservedIDs``), longer than
  /// ``GeofenceDefinitions/GeofenceValidator/maximumIDLength`` characters (Unicode scalars)
  /// or holds a control character (U+0000-U+001F, U+007F), or its metadata is not the text of a JSON object (events carry it verbatim, so it must be
  /// valid JSON). The shape is valid by construction.
  /// - Complexity: O(m) in the metadata's length.
  public static func problem(of geofence: Geofence) -> String? {
    let id = geofence.id
    if id.isEmpty { return "the id is empty" }
    if GeofenceValidator.reservedIDs.contains(id) {
      return "the id is reserved (the region budget planner's refresh circle)"
    }
    let length = id.unicodeScalars.count
    if length > GeofenceValidator.maximumIDLength {
      return
        "the id is \(length) characters long; at most \(GeofenceValidator.maximumIDLength) are "
        + "allowed"
    }
    if id.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) {
      return "the id holds a control character (U+0000-U+001F or U+007F)"
    }
    if let metadata = geofence.metadataJSON {
      do {
        guard case .object = try JSONDocument.parse(metadata.utf8) else {
          return "the metadata is not a JSON object"
        }
      } catch {
        return "the metadata is not JSON: \(error)"
      }
    }
    return nil
  }

  // MARK: Read access

  /// The monitored geofences, in slot order. O(n); allocates.
  public var geofences: [Geofence] { live.geofences }
  /// Heap bytes the live set holds, by part (index and geometry, ids, centres and radii,
  /// polygons, event id hashes, the id lookup, names and metadata), counted by capacity.
  /// Devices' state and the outbox are not included. O(n) in the ids longer than 15 bytes.
  public var memoryFootprint: [(part: String, bytes: Int)] {
    live.memoryFootprint + [
      ("events' geofence text (slots with events)", geofenceText.footprintBytes)
    ]
  }
  /// Number of monitored geofences. O(1).
  public var geofenceCount: Int { live.count }
  /// The monitored geofence with `id`, if any.
  public func geofence(id: String) -> Geofence? {
    live.slot(of: id).map { live.geofence(at: Int($0)) }
  }
  /// The stored set's version, sync times and staleness (``GeofenceSync/StoredSyncState``).
  public func setState() throws(EngineError) -> StoredSyncState {
    do { return try geofenceStore.state() } catch { throw .store("\(error)") }
  }

  /// One device's state as the engine holds it.
  public struct DeviceSnapshot: Hashable, Sendable {
    /// Ids of the geofences the device is inside, sorted.
    public var insideGeofenceIDs: [String]
    /// Time of the latest fix taken (seconds since the Unix epoch), if any.
    public var lastFixTime: Double?
    /// Fixes the detector accepted.
    public var acceptedFixCount: Int
    /// The open monitoring gap's start, if any.
    public var gapStart: Double?
  }

  /// The state of `device` (restored from the store, and then kept in memory, when not in
  /// memory), or nil when the engine has never seen it.
  public func deviceState(_ device: String) throws(EngineError) -> DeviceSnapshot? {
    guard let d = try loadedDevice(device) else { return nil }
    // Kept in memory: its next fix would restore it again.
    if devices[DeviceKey(device)] == nil {
      var d = d
      useCount &+= 1
      d.lastUse = useCount
      devices[DeviceKey(device)] = d
    }
    return DeviceSnapshot(
      insideGeofenceIDs: d.gate.detector.insideSlots.map { live.id(at: Int($0)) }
        .sorted(),
      lastFixTime: d.lastSeenTime, acceptedFixCount: d.gate.detector.acceptedFixCount,
      gapStart: d.gate.gapStart)
  }

  /// Ids of the devices in memory, sorted.
  public var deviceIDs: [String] { devices.keys.map(\.id).sorted() }

  // MARK: Identity

  /// The signed-in user, if any.
  public var userID: String? { identityFile?.userID ?? userIDInMemory }
  /// The anonymous id events carry while nobody is signed in (``IdentityMode/persisted``).
  public var anonymousID: String? { userID == nil ? identityFile?.anonymousID : nil }

  /// Longest user id accepted, in characters (Appy's limit).
  public static let maximumUserIDCharacters = 128

  /// Signs `user` in (or out with `nil`). Events created from now on carry it; events
  /// already created keep theirs (identity is stamped when an event is created).
  ///
  /// The id is trimmed of white space and line breaks first; an id that is then empty, longer
  /// than ``maximumUserIDCharacters`` characters (grapheme clusters), or holding a control
  /// character (a line break or tab inside it, Unicode category Cc) is refused and the
  /// identity is unchanged.
  /// - Throws: ``EngineError/invalidUserID(_:)`` for an empty, too long or control-character id;
  ///   ``EngineError/store(_:)`` when the identity cannot be saved.
  public func identify(user: String?) throws(EngineError) {
    let user = try user.map { (raw) throws(EngineError) -> String in try Self.validUserID(raw) }
    do {
      if let identityFile {
        try identityFile.setUser(user)
      } else {
        userIDInMemory = user
        if let user {
          try stateStore.setValue(user, key: "user_id")
        } else {
          try stateStore.database.execute("DELETE FROM engine_state WHERE key = 'user_id'")
        }
      }
    } catch { throw .store("\(error)") }
  }

  /// `raw` trimmed, or the error that refuses it (see ``identify(user:)``).
  public static func validUserID(_ raw: String) throws(EngineError) -> String {
    let trimmed = raw.trimmingCharacters(in: .whitespacesAndNewlines)
    guard !trimmed.isEmpty else {
      throw .invalidUserID("a user id must not be empty (after trimming white space)")
    }
    if let bad = trimmed.unicodeScalars.first(where: { $0.properties.generalCategory == .control })
    {
      throw .invalidUserID(
        "a user id must not hold control characters (found U+"
          + String(bad.value, radix: 16, uppercase: true).leftPadded(to: 4) + ")")
    }
    guard trimmed.count <= maximumUserIDCharacters else {
      throw .invalidUserID(
        "a user id has at most \(maximumUserIDCharacters) characters; this one has "
          + "\(trimmed.count)")
    }
    return trimmed
  }

  /// Signs out and, with ``IdentityMode/persisted``, starts a new anonymous id; with
  /// sessions, the next event starts a new session. Region state and queued events are kept.
  public func reset() throws(EngineError) {
    do {
      try identityFile?.reset()
      if identityFile == nil { try identify(user: nil) }
    } catch let e as EngineError { throw e } catch { throw .store("\(error)") }
    try endSession()
  }
}

/// What went wrong in a ``GeofenceEngine`` call.
public enum EngineError: Error, CustomStringConvertible, Sendable {
  /// A store file could not be opened, read or written.
  case store(String)
  /// The configuration cannot work (the message says why).
  case invalidConfiguration(String)
  /// ``GeofenceEngine/sync(full:)`` failed; the stored set is kept, marked stale.
  case sync(SyncError)
  /// The outbox holds events queued for another account (another API key's fingerprint,
  /// ``Networking/KeyFingerprint``). A fingerprint an earlier version recorded is not shown.
  case accountMismatch(stored: String, given: String)
  /// A user id was refused by ``GeofenceEngine/identify(user:)`` (the message says why).
  case invalidUserID(String)
  /// A fix was given with an empty device id (``GeofenceEngine/ingest(_:device:)``); the fix
  /// is not taken.
  case emptyDeviceID
  /// The directory store is in use: another process delivers from it (it holds
  /// `delivery.lock`), or `geofence repair` is repairing it (it holds `store.lock`). A
  /// temporary condition, to try again later (the message says which store and why).
  case storeInUse(String)
  /// A checkpoint record cannot be restored (the message says why; see
  /// ``GeofenceEngine/restoreDevice(fromCheckpointRecord:)``).
  case invalidCheckpoint(String)
  /// The device's row in `state.sqlite` cannot be decoded or restored (`reason` says why).
  /// The engine neither starts the device afresh (its visits would be lost without a word)
  /// nor changes the row: `geofence repair` (``StoreRepair``) reports and removes such rows.
  case damagedCheckpoint(device: String, reason: String)

  public var description: String {
    switch self {
    case .store(let m): return "store: \(m)"
    case .invalidConfiguration(let m): return "invalid configuration: \(m)"
    case .sync(let e): return "sync failed: \(e)"
    case .accountMismatch(let stored, let given):
      // An earlier version's fingerprint is a fast hash a weak key can be guessed from.
      let shown =
        KeyFingerprint.isCurrent(stored)
        ? "key fingerprint \(stored)"
        : "its key's fingerprint, recorded by an earlier version, "
          + "is not shown"
      return
        "the outbox holds events of another account (\(shown)); this key's fingerprint is "
        + "\(given)"
    case .invalidCheckpoint(let m): return "invalid checkpoint record: \(m)"
    case .invalidUserID(let m): return "invalid user id: \(m)"
    case .emptyDeviceID: return "the device id is empty"
    case .storeInUse(let m): return "store in use: \(m)"
    case .damagedCheckpoint(let device, let reason):
      return
        "state.sqlite: the checkpoint of device \(JSONText.quoted(device)) is damaged: \(reason)"
    }
  }
}

/// What a ``GeofenceEngine`` did so far.
public struct EngineReport: Hashable, Sendable {
  /// Fixes handed to ``GeofenceEngine/ingest(_:device:)``.
  public var fixes = 0
  /// Fixes dropped by the gate because monitoring was off.
  public var notAuthorized = 0
  /// The same, by blocker (a fix counts once for every blocker that applied).
  public var blockedCounts: [MonitoringBlocker: Int] = [:]
  /// Fixes dropped by the engine or the detector, by reason.
  public var dropCounts = DropCounts()
  /// Events created, by type.
  public var eventCounts = EventCounts()
  /// Events flagged as coming after a monitoring gap.
  public var afterGapEvents = 0
  /// Removal EXITs emitted by syncs.
  public var removalEvents = 0
  /// Events added to the outbox (an event already queued with the same id is not added again).
  public var enqueued = 0
  /// Monitoring gaps opened.
  public var gaps = 0
  /// Queued events deleted because consent was withdrawn.
  public var deletedForConsent = 0

  public init() {}
}

extension String {
  /// `self` with `0` in front up to `width` characters.
  fileprivate func leftPadded(to width: Int) -> String {
    count >= width ? self : String(repeating: "0", count: width - count) + self
  }
}
