import DelimitedText
import Foundation
import LocationAuthorization
import TrackFormats

/// Authorization states over time, to replay a track through the gate as the permissions
/// changed (for example a downgrade and a re-grant mid-track).
public struct AuthorizationTimeline: Hashable, Sendable {
  /// One change: from `time` (seconds since the Unix epoch) on, the state is `state`.
  public struct Change: Hashable, Sendable {
    public var time: Double
    public var state: AuthorizationState
    public init(time: Double, state: AuthorizationState) {
      self.time = time
      self.state = state
    }
  }

  /// The changes in time order (stable for equal times: the later line wins).
  public var changes: [Change]

  public init(changes: [Change]) {
    self.changes = changes.enumerated().sorted {
      ($0.element.time, $0.offset) < ($1.element.time, $1.offset)
    }
    .map(\.element)
  }

  /// Everything granted: `authorizedAlways`, full accuracy, background, consent on,
  /// registered. The state `geofence run` assumes without `--auth`.
  public static let granted = AuthorizationState(
    status: .authorizedAlways, accuracy: .full, appState: .background, trackingConsent: true,
    geofencingRegistered: true)
}

/// A line of an authorization timeline that cannot be used.
public struct AuthorizationTimelineError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The 1-based line.
  public var line: Int
  public var message: String
  public init(line: Int, message: String) {
    self.line = line
    self.message = message
  }
  public var description: String { "line \(line): \(message)" }
}

extension AuthorizationTimeline {
  /// Reads a timeline from JSON lines or CSV.
  ///
  /// - **JSON lines** (the first non-blank character is `{`): one object per line with
  ///   `time` and any of `status`, `accuracy`, `app_state`, `consent`, `registered`.
  /// - **CSV** (comma, semicolon or tab): a header naming the same columns
  ///   (`time,status,accuracy,app_state,consent,registered`; order free, `time` required).
  ///
  /// Values: `time` is RFC 3339 with an offset (or `Z`) or seconds since the Unix epoch;
  /// `status` is one of `notDetermined`, `restricted`, `denied`, `authorizedWhenInUse`,
  /// `authorizedAlways` (also `not_determined`, `when_in_use`, `whenInUse`, `always`);
  /// `accuracy` `full` or `reduced`; `app_state` `foreground` or `background`; `consent` and
  /// `registered` `true`/`false` (also `1`/`0`, `yes`/`no`, `on`/`off`). A field that is
  /// missing or empty keeps the previous line's value; the first line starts from
  /// ``granted``, so a file may list only what changes.
  /// - Throws: ``AuthorizationTimelineError`` naming the first bad line (1-based).
  /// - Complexity: O(n) in the text's length, plus the sort of the changes.
  public static func parse(_ text: String) throws(AuthorizationTimelineError)
    -> AuthorizationTimeline
  {
    let trimmed = text.drop { $0.isWhitespace }
    var changes: [Change] = []
    var current = granted
    if trimmed.first == "{" {
      for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false)
        .enumerated()
      {
        let lineNumber = index + 1
        guard !line.allSatisfy(\.isWhitespace) else { continue }
        guard
          let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        else {
          throw AuthorizationTimelineError(line: lineNumber, message: "not a JSON object")
        }
        var fields: [String: String] = [:]
        for (key, value) in object {
          if let s = value as? String {
            fields[key] = s
          } else if let i = value as? Int {
            fields[key] = String(i)
          } else if let d = value as? Double {
            fields[key] = String(d)
          } else if let b = value as? Bool {
            fields[key] = b ? "true" : "false"
          } else if !(value is NSNull) {
            throw AuthorizationTimelineError(line: lineNumber, message: "bad value for \(key)")
          }
        }
        let change = try apply(fields, to: &current, line: lineNumber)
        changes.append(change)
      }
    } else {
      let firstLine = trimmed.prefix { $0 != "\n" && $0 != "\r" }
      let (records, issues) = DelimitedText.records(
        in: text, delimiter: DelimitedText.detectDelimiter(in: firstLine))
      if let issue = issues.first {
        throw AuthorizationTimelineError(line: issue.line, message: issue.message)
      }
      guard let header = records.first else { return AuthorizationTimeline(changes: []) }
      let names = header.fields.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
      guard names.contains("time") else {
        throw AuthorizationTimelineError(
          line: header.line, message: "no 'time' column in the header")
      }
      for record in records.dropFirst() {
        var fields: [String: String] = [:]
        for (name, value) in zip(names, record.fields) {
          fields[name] = value.trimmingCharacters(in: .whitespaces)
        }
        changes.append(try apply(fields, to: &current, line: record.line))
      }
    }
    return AuthorizationTimeline(changes: changes)
  }

  private static func apply(
    _ fields: [String: String], to state: inout AuthorizationState, line: Int
  ) throws(AuthorizationTimelineError) -> Change {
    func fail(_ message: String) -> AuthorizationTimelineError {
      AuthorizationTimelineError(line: line, message: message)
    }
    guard let timeText = fields["time"], !timeText.isEmpty else { throw fail("missing time") }
    let time: Double
    if let seconds = Double(timeText), seconds.isFinite {
      time = seconds
    } else if let parsed = RFC3339.parse(timeText), parsed.hadZone {
      time = parsed.seconds
    } else {
      throw fail("time '\(timeText)' is neither RFC 3339 with an offset nor epoch seconds")
    }
    for (name, value) in fields where !value.isEmpty {
      switch name {
      case "time": break
      case "status":
        let aliases: [String: AuthorizationStatus] = [
          "not_determined": .notDetermined, "when_in_use": .authorizedWhenInUse,
          "wheninuse": .authorizedWhenInUse, "always": .authorizedAlways,
          "authorized_always": .authorizedAlways, "authorized_when_in_use": .authorizedWhenInUse,
        ]
        guard
          let s = AuthorizationStatus(rawValue: value) ?? aliases[value.lowercased()]
            ?? AuthorizationStatus.allCases.first(where: {
              $0.rawValue.lowercased() == value.lowercased()
            })
        else { throw fail("unknown status '\(value)'") }
        state.status = s
      case "accuracy":
        guard let a = AccuracyAuthorization(rawValue: value.lowercased()) else {
          throw fail("accuracy must be full or reduced, got '\(value)'")
        }
        state.accuracy = a
      case "app_state":
        guard let a = AppState(rawValue: value.lowercased()) else {
          throw fail("app_state must be foreground or background, got '\(value)'")
        }
        state.appState = a
      case "consent", "registered":
        let b: Bool
        switch value.lowercased() {
        case "true", "1", "yes", "on": b = true
        case "false", "0", "no", "off": b = false
        default: throw fail("\(name) must be true or false, got '\(value)'")
        }
        if name == "consent" { state.trackingConsent = b } else { state.geofencingRegistered = b }
      default:
        throw fail("unknown field '\(name)'")
      }
    }
    return Change(time: time, state: state)
  }
}
