import DelimitedText
import Foundation
import GeofenceDefinitions
import LocationAuthorization
import NumberText
import GeofenceTransitions
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
  ///   `time` and any of `status`, `accuracy`, `app_state`, `consent`, `registered`. Each
  ///   line is read as strict JSON (``GeofenceDefinitions/JSONDocument``): `consent` and
  ///   `registered` must be JSON booleans (`true`, `false`; a string such as `"yes"` is an
  ///   error), `status`, `accuracy` and `app_state` strings, `time` a string or a number;
  ///   `null` counts as absent.
  /// - **CSV** (comma, semicolon or tab): a header naming the same columns
  ///   (`time,status,accuracy,app_state,consent,registered`; order free, `time` required).
  ///   `consent` and `registered` are text there: `true`/`false`, also `1`/`0`, `yes`/`no`,
  ///   `on`/`off`.
  ///
  /// A UTF-8 byte-order mark at the start is skipped. Values: `time` is RFC 3339 with an
  /// offset (or `Z`) or seconds since the Unix epoch (a number in ``NumberText/NumberText``'s
  /// grammar); `status` is one of `notDetermined`, `restricted`, `denied`,
  /// `authorizedWhenInUse`, `authorizedAlways` (also `not_determined`, `when_in_use`,
  /// `whenInUse`, `always`); `accuracy` `full` or `reduced`; `app_state` `foreground` or
  /// `background`. A field that is missing or empty keeps the previous line's value; the
  /// first line starts from ``granted``, so a file may list only what changes.
  ///
  /// Lines must be in time order (equal times allowed: the later line wins): each line states
  /// what changed since the one before, so a line out of order would change the meaning of
  /// every line after it; it is an error naming both lines rather than a silent sort.
  /// - Throws: ``AuthorizationTimelineError`` naming the first bad line (1-based).
  /// - Complexity: O(n) in the text's length.
  /// A time for a message: RFC 3339 when a date can name it, else the seconds.
  static func shown(_ t: Double) -> String {
    DetectorCheckpoint.representableTimes.contains(t) ? RFC3339.format(t) : "\(t) s"
  }

  public static func parse(_ text: String) throws(AuthorizationTimelineError)
    -> AuthorizationTimeline
  {
    let text = text.hasPrefix("\u{FEFF}") ? String(text.dropFirst()) : text
    let trimmed = text.drop { $0.isWhitespace }
    var changes: [Change] = []
    var lines: [Int] = []
    var current = granted
    func add(_ change: Change, line: Int) throws(AuthorizationTimelineError) {
      if let last = changes.last, change.time < last.time {
        throw AuthorizationTimelineError(
          line: line,
          message:
            "time \(Self.shown(change.time)) is before line \(lines[lines.count - 1])'s time "
            + "\(Self.shown(last.time)); lines must be in time order")
      }
      changes.append(change)
      lines.append(line)
    }
    if trimmed.isEmpty {
      throw AuthorizationTimelineError(line: 1, message: "the timeline is empty (no header)")
    }
    if trimmed.first == "{" {
      for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false)
        .enumerated()
      {
        let lineNumber = index + 1
        guard !line.allSatisfy(\.isWhitespace) else { continue }
        let object: [String: JSONValue]
        do {
          guard case .object(let members) = try JSONDocument.parse(Array(line.utf8)) else {
            throw AuthorizationTimelineError(line: lineNumber, message: "not a JSON object")
          }
          object = members
        } catch let error as AuthorizationTimelineError {
          throw error
        } catch {
          throw AuthorizationTimelineError(line: lineNumber, message: "not valid JSON: \(error)")
        }
        var fields: [String: String] = [:]
        for (key, value) in object {
          func wrongType(_ expected: String) -> AuthorizationTimelineError {
            AuthorizationTimelineError(
              line: lineNumber,
              message: "\(key) must be \(expected), found \(value.canonicalText)")
          }
          switch (key, value) {
          case (_, .null): continue
          case ("consent", .bool(let b)), ("registered", .bool(let b)):
            fields[key] = b ? "true" : "false"
          case ("consent", _), ("registered", _):
            throw wrongType("true or false (a JSON boolean)")
          case ("time", .number(let x)): fields[key] = "\(x)"
          case ("time", .string(let s)): fields[key] = s
          case ("time", _): throw wrongType("an RFC 3339 string or epoch seconds")
          case (_, .string(let s)): fields[key] = s
          default:
            // Unknown keys are reported by apply(_:to:line:); known ones need a string.
            fields[key] = value.canonicalText
          }
        }
        try add(try apply(fields, to: &current, line: lineNumber), line: lineNumber)
      }
    } else {
      let firstLine = trimmed.prefix { $0 != "\n" && $0 != "\r" }
      let (records, issues) = DelimitedText.records(
        in: text, delimiter: DelimitedText.detectDelimiter(in: firstLine))
      if let issue = issues.first {
        throw AuthorizationTimelineError(line: issue.line, message: issue.message)
      }
      guard let header = records.first else {
        throw AuthorizationTimelineError(line: 1, message: "the timeline is empty (no header)")
      }
      let names = header.fields.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
      guard names.contains("time") else {
        throw AuthorizationTimelineError(
          line: header.line, message: "no 'time' column in the header")
      }
      let known: Set = ["time", "status", "accuracy", "app_state", "consent", "registered"]
      if let unknown = names.first(where: { !known.contains($0) }) {
        throw AuthorizationTimelineError(
          line: header.line, message: "unknown column '\(unknown)' in the header")
      }
      for record in records.dropFirst() {
        var fields: [String: String] = [:]
        for (name, value) in zip(names, record.fields) {
          fields[name] = value.trimmingCharacters(in: .whitespaces)
        }
        try add(try apply(fields, to: &current, line: record.line), line: record.line)
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
    if let seconds = NumberText.double(timeText) {
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
