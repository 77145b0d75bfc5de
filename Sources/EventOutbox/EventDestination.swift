/// A stage that events pass through at delivery time, after they leave the outbox and before
/// a destination sends them: a filter that drops an event, an enrichment that adds members,
/// a redaction that removes or coarsens coordinates.
///
/// Stages run when a batch is taken for a destination, never on the ingest path: the outbox
/// stores the event as it was created, and each destination's stages see that stored form.
/// A stage must be deterministic in the event (the same event gives the same result), because
/// a batch sent again after a crash runs it again.
public protocol EventStage {
  /// The event to send instead of `event`, or `nil` to drop it for this destination (it is
  /// then settled as filtered, counted in ``DestinationCounts/filtered``, and never sent).
  /// The returned event must keep `event.id`: receivers deduplicate by it.
  func process(_ event: OutboxEvent) -> OutboxEvent?
}

/// The stages of one destination, in the Segment/Hightouch order: every **before** stage
/// (filters) first, then every **enrichment** stage, each in the order given.
public struct DeliveryStages {
  /// Filters (and anything that must see the event as stored).
  public var before: [any EventStage]
  /// Enrichments and redactions, after the filters.
  public var enrichment: [any EventStage]

  public init(before: [any EventStage] = [], enrichment: [any EventStage] = []) {
    self.before = before
    self.enrichment = enrichment
  }

  /// No stages: events are sent as stored.
  public static var none: DeliveryStages { DeliveryStages() }

  /// Whether there is no stage at all.
  public var isEmpty: Bool { before.isEmpty && enrichment.isEmpty }

  /// `event` through every stage, or `nil` when one dropped it. A stage that changes the id
  /// is a programming error and traps.
  /// - Complexity: the stages' cost.
  public func apply(_ event: OutboxEvent) -> OutboxEvent? {
    var current = event
    for stage in before + enrichment {
      guard let next = stage.process(current) else { return nil }
      precondition(next.id == event.id, "a stage must keep the event's id")
      current = next
    }
    return current
  }

  /// Runs the stages over a batch: its events replaced by what the stages made of them, and
  /// the ids of those dropped in ``Outbox/Batch/filtered`` (their entries left as they were).
  func prepare(_ batch: inout Outbox.Batch) {
    guard !isEmpty else { return }
    for i in batch.events.indices {
      if let kept = apply(batch.events[i]) {
        batch.events[i] = kept
      } else {
        batch.filtered.insert(batch.events[i].id)
      }
    }
  }
}

/// What a destination made of one batch.
public struct DestinationAnswer: Hashable, Sendable {
  /// Ids it took (delivered, or already delivered earlier: receivers deduplicate by id).
  public var delivered: [String]
  /// Ids it refused for good, each with the reason: dead-lettered for this destination.
  public var rejected: [String: String]
  /// Why the events neither delivered nor rejected could not be delivered now (after the
  /// destination's own retries), or `nil`. They stay pending, first in line for the next
  /// delivery call; the call stops.
  public var failure: String?

  public init(delivered: [String] = [], rejected: [String: String] = [:], failure: String? = nil) {
    self.delivered = delivered
    self.rejected = rejected
    self.failure = failure
  }
}

/// A place events are delivered to, with its own durable cursor in the outbox.
///
/// The outbox hands a destination its events in enqueue order, in batches of at most
/// ``maxBatchEvents``, after the destination's ``DeliveryStages``; delivery is at least once
/// (a crash between sending and the outbox's commit sends the batch again), so a receiver
/// deduplicates by ``OutboxEvent/id``, the idempotency key.
///
/// Conform a class to add a destination of your own; ``DestinationDelivery`` drives it. The
/// server's batch API (``OutboxUploader``) is the shipped destination with richer answer
/// rules (per-event `rejected`, `413` splits); the engine ships a webhook, a JSON Lines
/// file and standard output.
public protocol EventDestination: AnyObject {
  /// The name of the destination's cursor: stable across restarts (a renamed destination
  /// starts again from the oldest queued event), unique in one outbox, not
  /// ``Outbox/serverDestination``.
  var name: String { get }
  /// Most events handed to one ``deliver(_:attempt:)``, >= 1.
  var maxBatchEvents: Int { get }
  /// Delivers `events` (in order, at most ``maxBatchEvents``). Retries and deadlines are the
  /// destination's own (through `Networking.RetryingSender` for HTTP).
  /// - Parameter attempt: 1 for the first delivery of the batch's newest event; more when
  ///   some of its events were attempted before (continued across restarts).
  func deliver(_ events: [OutboxEvent], attempt: Int) async -> DestinationAnswer
  /// Called by ``DestinationDelivery/flush()`` before its first batch: a delivery call
  /// begins. Default: nothing.
  func flushBegins()
}

extension EventDestination {
  public func flushBegins() {}
}

/// What one ``DestinationDelivery`` call did.
public struct DestinationReport: Hashable, Sendable {
  /// Batches handed to the destination.
  public var batches = 0
  /// Events it delivered.
  public var delivered = 0
  /// Events it rejected (dead-lettered for it).
  public var rejected = 0
  /// Events a stage dropped for it.
  public var filtered = 0
  /// Why the call stopped with events pending, if it did.
  public var stopped: String?

  public init() {}

  /// Adds `other`'s counts; keeps the first stop.
  public mutating func add(_ other: DestinationReport) {
    batches += other.batches
    delivered += other.delivered
    rejected += other.rejected
    filtered += other.filtered
    stopped = stopped ?? other.stopped
  }
}

/// Delivers an outbox's events to one ``EventDestination`` from its cursor.
///
/// Each batch is taken after the destination's cursor and marked in flight, passed through
/// the stages, rid of events whose stored payload is not a JSON object (dead-lettered with
/// the reason: a damaged file never blocks the queue), handed to the destination, and settled in one transaction: delivered and
/// filtered events move the cursor, rejected ones are dead-lettered for this destination,
/// the rest go back to pending and the call stops (``DestinationReport/stopped``). Other
/// destinations' cursors are untouched, so one failing destination never holds another back.
///
/// **Threads.** Not `Sendable`; use it with its outbox from one isolation domain.
public final class DestinationDelivery {
  public let outbox: Outbox
  public let destination: any EventDestination
  public let stages: DeliveryStages

  /// - Parameters:
  ///   - outbox: the queue; the destination's cursor is registered on the first call.
  ///   - destination: where events go.
  ///   - stages: run on each event before it is handed over. Default none.
  public init(outbox: Outbox, destination: any EventDestination, stages: DeliveryStages = .none) {
    precondition(destination.name != Outbox.serverDestination, "the server's cursor is taken")
    precondition(destination.maxBatchEvents >= 1, "maxBatchEvents must be >= 1")
    self.outbox = outbox
    self.destination = destination
    self.stages = stages
  }

  /// Delivers every event pending for the destination now, batch after batch, until none is
  /// left or the destination reports a failure.
  /// - Throws: ``SQLiteError`` from the outbox.
  /// - Complexity: one outbox transaction per batch, plus the destination's cost.
  @discardableResult
  public func flush() async throws -> DestinationReport {
    try outbox.register(destination: destination.name)
    destination.flushBegins()
    var report = DestinationReport()
    while report.stopped == nil,
      var batch = try outbox.takeBatch(
        limit: destination.maxBatchEvents, destination: destination.name)
    {
      stages.prepare(&batch)
      // A payload that is not a JSON object is dead-lettered alone, before the destination.
      report.rejected += try outbox.deadLetterUnsendable(&batch)
      let dropped = batch.filtered
      let kept = batch.sendable
      var answer = DestinationAnswer()
      if !kept.isEmpty {
        answer = await destination.deliver(kept, attempt: batch.attempt)
        report.batches += 1
      }
      let ids = Set(kept.map(\.id))
      let delivered = Set(answer.delivered).intersection(ids)
      let rejected = answer.rejected.filter { ids.contains($0.key) && !delivered.contains($0.key) }
      try outbox.settle(batch, delivered: delivered, rejected: rejected)
      report.delivered += delivered.count
      report.rejected += rejected.count
      report.filtered += dropped.count
      if delivered.count + rejected.count < ids.count {
        report.stopped =
          answer.failure ?? "\(ids.count - delivered.count - rejected.count) "
          + "events neither delivered nor rejected"
      }
    }
    return report
  }
}
