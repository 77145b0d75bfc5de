import Foundation
import EventOutbox
import GeofenceTransitions
import JSONText

/// A before stage that keeps only events of some types (``EventOutbox/EventStage``): for a
/// destination that wants ENTERs only, say. Reads the payload's `type` member as
/// ``GeofenceEventEncoder`` writes it (the first member of the payload).
public struct EventTypeFilter: EventStage {
  /// The types kept; the others are dropped for the destination.
  public var kept: Set<TransitionType>

  public init(keeping kept: Set<TransitionType>) { self.kept = kept }

  public func process(_ event: OutboxEvent) -> OutboxEvent? {
    for type in kept where event.payload.hasPrefix(#"{"type":"\#(type.rawValue)""#) {
      return event
    }
    return nil
  }
}

/// An enrichment stage that coarsens the event's `latitude` and `longitude` to `decimals`
/// decimal places (``EventOutbox/EventStage``), or removes them with `nil`: for a destination
/// that must not learn precise positions. One decimal place of a degree is about 11 km, two
/// about 1.1 km, three about 110 m (on the WGS84 meridian, 111.32 km per degree at the
/// equator). `distance_m` and `accuracy` are kept; the geofence's own centre is not part of
/// the event.
///
/// Works on the payload's text as ``GeofenceEventEncoder`` writes it: the top-level members
/// are the last `,"latitude":` and `,"longitude":` of the payload (metadata comes before them,
/// and string values escape their quotes), so no parse is needed.
/// - Complexity: O(n) in the payload's length.
public struct CoordinateRedaction: EventStage {
  /// Decimal places kept, 0...6, or `nil` to remove both members.
  public var decimals: Int?

  public init(decimals: Int?) {
    precondition(decimals.map { (0...6).contains($0) } ?? true, "decimals must be in 0...6")
    self.decimals = decimals
  }

  public func process(_ event: OutboxEvent) -> OutboxEvent? {
    var payload = event.payload
    for name in [#","latitude":"#, #","longitude":"#] {
      guard let start = payload.range(of: name, options: .backwards) else { continue }
      let valueEnd =
        payload[start.upperBound...].firstIndex { $0 == "," || $0 == "}" } ?? payload.endIndex
      let value = Double(payload[start.upperBound..<valueEnd])
      if let decimals, let value {
        let text = JSONText.number(
          JSONText.rounded(value, decimals: decimals), style: .shortestRoundTrip)
        payload.replaceSubrange(start.upperBound..<valueEnd, with: text)
      } else {
        payload.removeSubrange(start.lowerBound..<valueEnd)
      }
    }
    var redacted = event
    redacted.payload = payload
    return redacted
  }
}
