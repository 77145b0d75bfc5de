import Foundation
import JSONText

/// One event in the outbox: a stable id, a JSON payload and the time it was created.
///
/// The outbox knows nothing about what an event means. On upload each event becomes one JSON
/// object: `{"id": <id>, ...the payload's members}` (the outbox writes the `id` member first,
/// then the payload's members as they were given).
public struct OutboxEvent: Hashable, Sendable {
  /// The event's stable id: the same logical event always has the same id (see
  /// ``OutboxEventID``), so a retried or re-created event is deduplicated by the server.
  /// Non-empty; at most 256 UTF-8 bytes (the protocol's limit).
  public var id: String
  /// A JSON object as UTF-8 text, **without** an `"id"` member, for example
  /// `{"type":"enter","geofence_id":"hnl"}`.
  public var payload: String
  /// When the event was created, seconds since the Unix epoch (UTC) on the outbox's clock.
  /// Set by ``Outbox/enqueue(_:)`` when `nil`.
  public var createdAt: Double?

  public init(id: String, payload: String, createdAt: Double? = nil) {
    self.id = id
    self.payload = payload
    self.createdAt = createdAt
  }

  /// The event as every destination receives it: `{"id":ID,<the payload's members>}`, the
  /// `id` member first and the payload's members as they were given.
  /// - Complexity: O(n) in the payload's length.
  public var jsonObject: String {
    var text = #"{"id":"# + JSONText.quoted(id)
    let members = payload.drop { $0 != "{" }.dropFirst()
    if members.contains(where: { !$0.isWhitespace && $0 != "}" }) { text += "," }
    text += members
    return text
  }
}

/// An event the server rejected, kept aside with the reason.
public struct DeadLetter: Hashable, Sendable {
  public var id: String
  public var payload: String
  /// The server's reason (the `reason` of a `rejected` entry, or the error of a single-event
  /// batch the server refused as a whole, such as `413`).
  public var reason: String
  /// When it was dead-lettered, on the outbox's clock (seconds since the Unix epoch).
  public var deadAt: Double
  /// Delivery attempts it took part in.
  public var attempts: Int
  /// The destination that rejected it (``Outbox/serverDestination`` for the server's batch
  /// API).
  public var destination: String = Outbox.serverDestination
}

/// How many events are where.
public struct OutboxCounts: Hashable, Sendable, CustomStringConvertible {
  /// Waiting to be sent.
  public var pending: Int
  /// Sent to some destination in a batch whose answer has not been applied yet. After a
  /// restart they go back to pending (``Outbox/init(path:configuration:clock:recoverInFlight:)``).
  public var inFlight: Int
  /// Rejected by the server, in the dead-letter table.
  public var deadLetters: Int
  /// Evicted since the outbox was created because the cap was reached (never silently).
  public var evicted: Int
  /// Deliveries confirmed since the outbox was created, over every destination (an event
  /// delivered to the server and to a webhook counts twice; with the server alone, the events
  /// it listed as accepted or duplicate). ``Outbox/counts(destination:)`` splits it.
  public var delivered: Int
  /// Deleted by ``Outbox/deleteAll()`` (consent withdrawn) since the outbox was created.
  public var deleted: Int

  /// `pending + inFlight`.
  public var queued: Int { pending + inFlight }

  public var description: String {
    "pending \(pending), in flight \(inFlight), dead letters \(deadLetters), evicted \(evicted), "
      + "delivered \(delivered), deleted \(deleted)"
  }
}

/// A problem with an event handed to the outbox.
public enum OutboxError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The id is empty or longer than 256 UTF-8 bytes.
  case invalidID(String)
  /// The payload is not a JSON object, or it has an `"id"` member.
  case invalidPayload(id: String, reason: String)

  public var description: String {
    switch self {
    case .invalidID(let id): return "invalid event id '\(id)': empty or over 256 bytes"
    case .invalidPayload(let id, let reason): return "invalid payload of event \(id): \(reason)"
    }
  }
}
