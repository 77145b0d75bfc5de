import EventOutbox
import Foundation
import LocationAuthorization
import Networking
import RetryTiming
import SQLiteStore

/// The directories an engine is configured on in this process (see ``GeofenceEngine``'s
/// "Configured once").
enum ConfiguredStores {
  private static let lock = NSLock()
  nonisolated(unsafe) private static var claimed: Set<String> = []

  static func key(_ directory: String) -> String {
    URL(fileURLWithPath: directory).standardizedFileURL.resolvingSymlinksInPath().path
  }

  /// Claims `directory`; false when an engine holds it already.
  static func claim(_ directory: String) -> Bool {
    lock.lock()
    defer { lock.unlock() }
    return claimed.insert(key(directory)).inserted
  }

  static func release(_ directory: String) {
    lock.lock()
    defer { lock.unlock() }
    claimed.remove(key(directory))
  }
}

/// A destination the engine builds from its configuration, beside the server's batch API.
public enum DestinationConfiguration: Hashable, Sendable {
  /// One signed JSON `POST` per event (``EventOutbox/WebhookDestination``).
  case webhook(WebhookConfiguration)
  /// A rotating JSON Lines file (``EventOutbox/JSONLinesFileDestination``).
  case jsonLinesFile(JSONLinesFileConfiguration)
  /// Standard output, JSON Lines (``EventOutbox/StandardOutputDestination``), cursor
  /// `"stdout"`.
  case standardOutput
}

/// Sessions as Hightouch keeps them: a new one after ``timeoutSeconds`` without events, or
/// on ``GeofenceEngine/reset()``.
public struct SessionConfiguration: Hashable, Sendable {
  /// Seconds without an event (on the engine's clock, by the events' creation times) after
  /// which the next event starts a new session, > 0. Default 1,800 (30 minutes, Hightouch's
  /// and Segment's session timeout).
  public var timeoutSeconds: Double

  public init(timeoutSeconds: Double = 1_800) {
    precondition(timeoutSeconds > 0, "timeoutSeconds must be > 0")
    self.timeoutSeconds = timeoutSeconds
  }
}

/// The session state kept in `state.sqlite` (key `session`), so that sessions continue
/// across restarts.
struct SessionState: Codable, Hashable, Sendable {
  /// Start of the session, whole milliseconds since the Unix epoch; the session id.
  var startMilliseconds: Int64
  /// 1-based count of sessions on the store.
  var index: Int
  /// Events in the session so far.
  var eventCount: Int
  /// Creation time of the session's latest event, seconds since the Unix epoch.
  var lastEventAt: Double
  /// True after ``GeofenceEngine/reset()``: the next event starts session `index + 1`.
  var ended = false
}

/// What one ``GeofenceEngine/deliver(until:skipping:)`` or ``GeofenceEngine/deliverDue(until:skipping:)`` did.
public struct DeliveryReport: Hashable, Sendable {
  /// The server's batch API, when it was delivered to.
  public var server: UploadReport?
  /// Each other destination delivered to, by name, in the engine's order.
  public var destinations: [(name: String, report: DestinationReport)] = []

  public init() {}

  public static func == (a: DeliveryReport, b: DeliveryReport) -> Bool {
    a.server == b.server && a.destinations.map(\.name) == b.destinations.map(\.name)
      && a.destinations.map(\.report) == b.destinations.map(\.report)
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(server)
    for d in destinations {
      hasher.combine(d.name)
      hasher.combine(d.report)
    }
  }

  /// Whether some destination stopped with events pending.
  public var stopped: Bool {
    server?.stopped != nil || destinations.contains { $0.report.stopped != nil }
  }
}

extension GeofenceEngine {
  // MARK: Destinations

  /// Builds the configured destinations and registers every cursor (the server's when an
  /// upload is configured), so that no event leaves the outbox before each has it.
  func setUpDelivery() throws(EngineError) {
    guard let outbox else {
      if !configuration.destinations.isEmpty {
        throw .invalidConfiguration("destinations need an outbox")
      }
      return
    }
    if configuration.delivers, configuration.upload != nil || !configuration.destinations.isEmpty {
      try claimStore()
      // A webhook's cursor named by an earlier version with the URL's password in it takes
      // the name without it, keeping its place (before any cursor is registered by name).
      do { try WebhookConfiguration.migrateCursorNames(in: outbox) } catch {
        throw .store("outbox: \(error)")
      }
    }
    for d in configuration.destinations {
      let destination: any EventDestination
      switch d {
      case .webhook(let w):
        destination = WebhookDestination(configuration: w, transport: transport, clock: clock)
      case .jsonLinesFile(let f): destination = JSONLinesFileDestination(configuration: f)
      case .standardOutput: destination = StandardOutputDestination()
      }
      try add(destination: destination)
    }
    do {
      if configuration.upload != nil { try outbox.register(destination: Outbox.serverDestination) }
    } catch { throw .store("outbox: \(error)") }
  }

  /// Adds a destination of the caller's own (or a shipped one built by hand), with its
  /// stages, and registers its cursor: from now on no event leaves the outbox before it has
  /// settled it. A destination registered by an earlier run continues from its cursor.
  /// - Throws: ``EngineError/invalidConfiguration(_:)`` without an outbox, for the name
  ///   `"server"`, or for a name already added; ``EngineError/store(_:)``.
  public func add(destination: any EventDestination, stages: DeliveryStages = .none)
    throws(EngineError)
  {
    guard let outbox else { throw .invalidConfiguration("destinations need an outbox") }
    let name = destination.name
    guard !name.isEmpty, name != Outbox.serverDestination else {
      throw .invalidConfiguration("a destination's name must be non-empty and not \"server\"")
    }
    guard !deliveries.contains(where: { $0.destination.name == name }) else {
      throw .invalidConfiguration("two destinations are named \"\(name)\"")
    }
    guard destination.maxBatchEvents >= 1 else {
      throw .invalidConfiguration("destination \"\(name)\": maxBatchEvents must be >= 1")
    }
    try claimStore()
    do { try outbox.register(destination: name) } catch { throw .store("outbox: \(error)") }
    deliveries.append(DestinationDelivery(outbox: outbox, destination: destination, stages: stages))
  }

  /// Claims the store for this engine's delivery (see the type's "Configured once"): in this
  /// process, and across processes by an exclusive `DIR/delivery.lock` (``DirectoryLock``),
  /// so that two processes never send the same queued events (each would take the other's
  /// in-flight events for a crashed run's and send them again).
  func claimStore() throws(EngineError) {
    guard configuration.delivers, claimedDirectory == nil, case .directory(let d) = storage
    else { return }
    guard ConfiguredStores.claim(d) else {
      throw .invalidConfiguration(
        "an engine that delivers is already configured on \(d) in this process: configure "
          + "one per store (a second configure is an error, not a no-op)")
    }
    do {
      deliveryLock = try DirectoryLock(
        directory: d, fileName: DirectoryLock.deliveryFileName, exclusive: true)
    } catch {
      ConfiguredStores.release(d)
      switch error {
      case .held(let path):
        throw .storeInUse(
          "another process delivers from \(d) (it holds \(path)); try again when it is done")
      case .unavailable: throw .store("\(error)")
      }
    }
    claimedDirectory = d
  }

  /// Sets the stages of the destination named `name` (``EventOutbox/Outbox/serverDestination``
  /// for the server's batch API).
  /// - Throws: ``EngineError/invalidConfiguration(_:)`` for an unknown name.
  public func setStages(_ stages: DeliveryStages, forDestination name: String) throws(EngineError) {
    if name == Outbox.serverDestination {
      serverStages = stages
      return
    }
    guard let k = deliveries.firstIndex(where: { $0.destination.name == name }) else {
      throw .invalidConfiguration("no destination named \"\(name)\"")
    }
    deliveries[k] = DestinationDelivery(
      outbox: deliveries[k].outbox, destination: deliveries[k].destination, stages: stages)
  }

  /// The names of the destinations: `"server"` first when an upload is configured, then the
  /// others in the order added.
  public var destinationNames: [String] {
    (configuration.upload != nil ? [Outbox.serverDestination] : [])
      + deliveries.map(\.destination.name)
  }

  /// Counts for the destination named `name`.
  public func destinationCounts(_ name: String) throws(EngineError) -> DestinationCounts {
    guard let outbox else { throw .invalidConfiguration("no outbox configured") }
    do { return try outbox.counts(destination: name) } catch { throw .store("outbox: \(error)") }
  }

  // MARK: Delivery

  /// Delivers every queued event to every destination now (the explicit flush), after saving
  /// the device checkpoints. Each destination goes from its own cursor; one that fails stops
  /// on its own (``DeliveryReport/stopped``) while the others go on.
  /// - Parameter deadline: the time on the engine's clock after which no request starts and
  ///   no retry wait begins, for every destination; `nil` for now plus
  ///   ``UploadConfiguration/deadlineSeconds`` (300 s without an upload configuration).
  ///   - skipping: names of destinations to leave alone this time. Default none.
  /// - Throws: ``EngineError/invalidConfiguration(_:)`` without an outbox or any destination;
  ///   ``EngineError/accountMismatch(stored:given:)``; ``EngineError/store(_:)``;
  ///   ``EngineError/storeInUse(_:)`` while another delivery of this engine awaits.
  @discardableResult
  nonisolated(nonsending) public func deliver(
    until deadline: Double? = nil, skipping: Set<String> = []
  )
    async throws(EngineError) -> DeliveryReport
  {
    try checkpoint()
    flushRequested = false
    return try await deliver(
      until: deadline, only: Set(destinationNames).subtracting(skipping))
  }

  /// Delivers to the destinations the ``Configuration/flushPolicy`` makes due now: all of
  /// them after a transition (``EventOutbox/FlushPolicy/immediateOnTransition``) or the app's
  /// move to the background (``EventOutbox/FlushPolicy/onBackground``); otherwise each one
  /// whose pending events reach the count, interval or debounce trigger. Call it after
  /// ingesting and on a timer (``nextFlushTime()``).
  /// - Parameters:
  ///   - deadline: as for ``deliver(until:skipping:)``.
  ///   - skipping: names of destinations to leave alone this time. Default none.
  @discardableResult
  nonisolated(nonsending) public func deliverDue(
    until deadline: Double? = nil, skipping: Set<String> = []
  )
    async throws(EngineError) -> DeliveryReport
  {
    guard let outbox else { throw .invalidConfiguration("no outbox configured") }
    // The delivery awaiting on the owner's actor sends what is due.
    if deliveryInProgress { return DeliveryReport() }
    let names = Set(destinationNames).subtracting(skipping)
    if flushRequested {
      flushRequested = false
      return try await deliver(until: deadline, only: names)
    }
    let now = clock.now()
    var due: Set<String> = []
    do {
      for name in destinationNames where names.contains(name) {
        let p = try outbox.pendingSummary(destination: name)
        if configuration.flushPolicy.isDue(
          pending: p.count, oldestCreatedAt: p.oldestCreatedAt, newestCreatedAt: p.newestCreatedAt,
          now: now)
        {
          due.insert(name)
        }
      }
    } catch { throw .store("outbox: \(error)") }
    guard !due.isEmpty else { return DeliveryReport() }
    return try await deliver(until: deadline, only: due)
  }

  /// The earliest time on the engine's clock at which ``deliverDue(until:skipping:)`` will deliver
  /// something by count, interval or debounce (`-infinity`: now); `nil` when nothing will
  /// become due by time alone.
  public func nextFlushTime() throws(EngineError) -> Double? {
    guard let outbox else { return nil }
    if flushRequested { return -.infinity }
    var next: Double?
    do {
      for name in destinationNames {
        let p = try outbox.pendingSummary(destination: name)
        if let t = configuration.flushPolicy.nextDueTime(
          pending: p.count, oldestCreatedAt: p.oldestCreatedAt, newestCreatedAt: p.newestCreatedAt)
        {
          next = min(next ?? .infinity, t)
        }
      }
    } catch { throw .store("outbox: \(error)") }
    return next
  }

  nonisolated(nonsending) private func deliver(until deadline: Double?, only names: Set<String>)
    async throws(EngineError) -> DeliveryReport
  {
    guard outbox != nil else { throw .invalidConfiguration("no outbox configured") }
    guard configuration.upload != nil || !deliveries.isEmpty else {
      throw .invalidConfiguration("no destination configured")
    }
    try checkDelivers()
    try beginDelivery()
    defer { deliveryInProgress = false }
    let end = deadline ?? clock.now() + (configuration.upload?.deadlineSeconds ?? 300)
    var report = DeliveryReport()
    if configuration.upload != nil, names.contains(Outbox.serverDestination) {
      let uploader = try makeUploader(until: end)
      do { report.server = try await uploader.flush() } catch { throw Self.outboxError(error) }
    }
    for delivery in deliveries where names.contains(delivery.destination.name) {
      if let webhook = delivery.destination as? WebhookDestination { webhook.deadline = end }
      do {
        report.destinations.append(
          (delivery.destination.name, try await delivery.flush()))
      } catch { throw Self.outboxError(error) }
    }
    return report
  }

  /// The error of a delivery whose outbox call failed with `error`: the outbox locked by
  /// another process's write for longer than SQLite's busy wait (`SQLITE_BUSY`, after
  /// ``SQLiteStore/Database/Options/busyTimeoutMilliseconds``) is a temporary condition,
  /// ``EngineError/storeInUse(_:)``; anything else is ``EngineError/store(_:)``.
  static func outboxError(_ error: any Error) -> EngineError {
    if let e = error as? SQLiteError, e.code == .busy {
      return .storeInUse(
        "outbox: another process held its write lock past the busy wait (\(e)); try again")
    }
    return .store("outbox: \(error)")
  }

  /// - Throws: ``EngineError/invalidConfiguration(_:)`` for an engine that only fills the
  ///   outbox (``Configuration/delivers`` false).
  func checkDelivers() throws(EngineError) {
    guard configuration.delivers else {
      throw .invalidConfiguration("this engine only fills the outbox (delivers is false)")
    }
  }

  /// Marks a delivery as running (see ``deliveryInProgress``).
  /// - Throws: ``EngineError/storeInUse(_:)`` when one already is.
  func beginDelivery() throws(EngineError) {
    guard !deliveryInProgress else {
      throw .storeInUse("a delivery of this engine is already in progress; try again after it")
    }
    deliveryInProgress = true
  }

  // MARK: Sessions

  /// Stamps `events[range]` with the session (starting a new one after the timeout) and
  /// saves the session state. Nothing without ``Configuration/sessions``. The events at
  /// `skipping` (already in the outbox: made again after a crash) are left unstamped and do
  /// not count, so a session's `event_index` runs 1, 2, 3... over the events it queued.
  /// - Complexity: O(k) for k events, and one small SQLite write.
  func stampSession(
    _ events: inout [GeofenceEvent], from first: Int, at now: Double, skipping: Set<Int> = []
  ) throws(EngineError) {
    guard let sessions = configuration.sessions, first < events.count else { return }
    if skipping.count == events.count - first { return }
    let saved = try currentSession()
    var s: SessionState
    if let saved, !saved.ended, now - saved.lastEventAt <= sessions.timeoutSeconds {
      s = saved
    } else {
      s = SessionState(
        startMilliseconds: Int64((now * 1000).rounded(.down)), index: (saved?.index ?? 0) + 1,
        eventCount: 0, lastEventAt: now)
    }
    let id = String(s.startMilliseconds)
    for k in first..<events.count where !skipping.contains(k) {
      s.eventCount += 1
      events[k].sessionID = id
      events[k].sessionIndex = s.index
      events[k].eventIndex = s.eventCount
    }
    s.lastEventAt = now
    session = s
    do { try stateStore.setValue(s, key: "session") } catch { throw .store("session: \(error)") }
  }

  /// The session in memory, else the saved one.
  func currentSession() throws(EngineError) -> SessionState? {
    if let session { return session }
    do { session = try stateStore.value(SessionState.self, key: "session") } catch {
      throw .store("session: \(error)")
    }
    return session
  }

  /// Ends the current session: the next event starts a new one (``reset()``).
  func endSession() throws(EngineError) {
    guard configuration.sessions != nil, var s = try currentSession() else { return }
    s.ended = true
    session = s
    do { try stateStore.setValue(s, key: "session") } catch { throw .store("session: \(error)") }
  }

  /// The current session's id, index and event count, if one is open.
  public var currentSessionInfo: (id: String, index: Int, events: Int)? {
    guard let s = try? currentSession(), !s.ended else { return nil }
    return (String(s.startMilliseconds), s.index, s.eventCount)
  }
}
