import Foundation
import GeofenceDefinitions
import NumberText

/// A small command-line parser: `--name value`, `--name=value`, boolean `--flag`, repeated
/// options and positionals; `--` ends options.
struct CommandLineArguments {
  struct Spec {
    /// Options that take a value (without the leading dashes).
    var valued: Set<String>
    /// Options that take no value.
    var flags: Set<String>
    /// Options that take one or more values up to the next option (e.g. `--regions A B`).
    var multiValued: Set<String> = []
    /// Valued options that may be given more than once; any other given twice is a usage
    /// error (a repeated `--key` or `--store` is a script's mistake more often than an
    /// override, and the last one silently winning would send to the wrong place).
    var repeatable: Set<String> = Spec.repeatedOptions

    /// The options every command takes more than once: geofence files and the radius before
    /// them (their order matters), destinations, OS budgets and the `plan` registrations.
    static let repeatedOptions: Set<String> = [
      "regions", "radius", "destination", "os-budget", "registered",
    ]
  }

  private(set) var values: [String: [String]] = [:]
  private(set) var flagsSet: Set<String> = []
  private(set) var positionals: [String] = []
  /// Every valued option in command-line order, for options whose meaning depends on position.
  private(set) var ordered: [(name: String, value: String)] = []

  init(_ args: [String], spec: Spec) throws(UsageError) {
    var i = 0
    var onlyPositionals = false
    while i < args.count {
      let arg = args[i]
      i += 1
      if onlyPositionals || !arg.hasPrefix("-") || arg == "-" {
        positionals.append(arg)
        continue
      }
      if arg == "--" {
        onlyPositionals = true
        continue
      }
      var name = String(arg.drop(while: { $0 == "-" }))
      var inline: String?
      if let eq = name.firstIndex(of: "=") {
        inline = String(name[name.index(after: eq)...])
        name = String(name[..<eq])
      }
      if name == "h" { name = "help" }
      if spec.flags.contains(name) {
        if inline != nil { throw UsageError("option --\(name) takes no value") }
        flagsSet.insert(name)
      } else if spec.valued.contains(name) || spec.multiValued.contains(name) {
        if let inline {
          values[name, default: []].append(inline)
          ordered.append((name, inline))
        } else {
          guard i < args.count, !args[i].hasPrefix("--") else {
            throw UsageError("option --\(name) needs a value")
          }
          values[name, default: []].append(args[i])
          ordered.append((name, args[i]))
          i += 1
          if spec.multiValued.contains(name) {
            while i < args.count, !args[i].hasPrefix("-") || args[i] == "-" {
              values[name, default: []].append(args[i])
              i += 1
            }
          }
        }
      } else {
        throw UsageError("unknown option \(arg)")
      }
    }
    // The values are not shown: one of them may be a key.
    for (name, _) in ordered
    where !spec.repeatable.contains(name) && !spec.multiValued.contains(name) {
      if ordered.lazy.filter({ $0.name == name }).count > 1 {
        throw UsageError("option --\(name) is given more than once; give it once")
      }
    }
  }

  func flag(_ name: String) -> Bool { flagsSet.contains(name) }
  func all(_ name: String) -> [String] { values[name] ?? [] }
  func last(_ name: String) -> String? { values[name]?.last }

  /// The last value of `--name` as a number, nil when not given.
  /// - Parameter positive: the value must also be above 0 (`range` then bounds it from above;
  ///   one message names both bounds, whichever is broken).
  /// - Throws: ``UsageError`` for text that is not a number or a value out of range.
  func double(_ name: String, range: ClosedRange<Double>? = nil, positive: Bool = false)
    throws(UsageError) -> Double?
  {
    guard let text = last(name) else { return nil }
    guard let v = NumberText.double(text) else {
      throw UsageError("--\(name) needs a number, got '\(text)'")
    }
    if positive, !(v > 0) || !(range?.contains(v) ?? true) {
      let upper = range.map { " and at most \($0.upperBound)" } ?? ""
      throw UsageError("--\(name) must be > 0\(upper), got \(v)")
    }
    if let range, !range.contains(v) {
      throw UsageError("--\(name) must be in \(range.lowerBound)...\(range.upperBound), got \(v)")
    }
    return v
  }

  func int(_ name: String, range: ClosedRange<Int>? = nil) throws(UsageError) -> Int? {
    guard let text = last(name) else { return nil }
    guard let v = Int(text) else { throw UsageError("--\(name) needs an integer, got '\(text)'") }
    if let range, !range.contains(v) {
      throw UsageError("--\(name) must be in \(range.lowerBound)...\(range.upperBound), got \(v)")
    }
    return v
  }
}

/// The `--server` URL: `http` or `https`, a host, and a port, when one is written, in
/// 1...65535 (RFC 6335 §6; port 0 cannot be connected to).
/// - Throws: ``UsageError`` naming what is wrong; a usage error, exit 64, before any request.
func serverURL(_ text: String) throws(UsageError) -> URL {
  guard let url = URL(string: text), let scheme = url.scheme?.lowercased(),
    scheme == "http" || scheme == "https", let host = url.host, !host.isEmpty
  else { throw UsageError("--server needs an http or https URL, got '\(text)'") }
  if let port = url.port, !(1...65_535).contains(port) {
    throw UsageError("--server port must be in 1...65535, got \(port) in '\(text)'")
  }
  return url
}

/// A command-line usage error: exit status 64 (EX_USAGE, sysexits.h).
struct UsageError: Error {
  var message: String
  /// The exit status: ``ExitStatus/usage`` (64), or ``ExitStatus/cannotCreate`` (73) for an
  /// output that cannot be created, which the commands check with their options.
  var status: Int32 = ExitStatus.usage
  init(_ message: String, status: Int32 = ExitStatus.usage) {
    self.message = message
    self.status = status
  }
}

/// Exit statuses from BSD sysexits.h.
enum ExitStatus {
  static let ok: Int32 = 0
  static let failure: Int32 = 1
  /// EX_USAGE: the command was used incorrectly.
  static let usage: Int32 = 64
  /// EX_DATAERR: the input data was incorrect.
  static let dataError: Int32 = 65
  /// EX_NOINPUT: an input file did not exist or was not readable.
  static let noInput: Int32 = 66
  /// EX_UNAVAILABLE: a service (the server) is unavailable.
  static let unavailable: Int32 = 69
  /// EX_CANTCREAT: an output file cannot be created.
  static let cannotCreate: Int32 = 73
  /// EX_IOERR: an input/output error (for example standard output closed).
  static let ioError: Int32 = 74
  /// EX_TEMPFAIL: try again later (for example another process holds the --state DIR).
  static let temporaryFailure: Int32 = 75
  /// EX_SOFTWARE: an internal error.
  static let software: Int32 = 70
}

extension CommandLineArguments {
  /// The arguments of a command that takes `--store DIR`, the given `flags` (and `--help`)
  /// and nothing else, with the store folder; or the exit status when the command ends
  /// here: 0 after printing `help` for `--help`, 64 (with the reason and a pointer to
  /// `--help` on standard error) for a usage error.
  static func storeCommand(
    _ argv: [String], command: String, help: String, flags: [String], valued: [String] = []
  ) -> Result<(arguments: CommandLineArguments, store: String), ExitCode> {
    do throws(UsageError) {
      let args = try CommandLineArguments(
        argv, spec: .init(valued: Set(["store"] + valued), flags: Set(["help"] + flags)))
      if args.flag("help") {
        print(help)
        return .failure(ExitCode(ExitStatus.ok))
      }
      guard let store = args.last("store") else { throw UsageError("give --store DIR") }
      if !args.positionals.isEmpty {
        throw UsageError("unexpected argument '\(args.positionals[0])'")
      }
      return .success((args, store))
    } catch {
      printError(
        "geofence \(command): \(error.message)\nRun 'geofence \(command) --help' for usage.")
      return .failure(ExitCode(ExitStatus.usage))
    }
  }
}

/// An exit status as an `Error`, for ``CommandLineArguments/storeCommand(_:command:help:flags:)``.
struct ExitCode: Error {
  let status: Int32
  init(_ status: Int32) { self.status = status }
}

extension CommandLineArguments {
  /// The value of `--radius`: metres in (0, ``GeofenceDefinitions/GeofenceValidator/maximumRadiusMeters``],
  /// the range a definition's radius is checked against.
  /// - Throws: ``UsageError`` naming the value otherwise.
  static func radiusMeters(_ value: String) throws(UsageError) -> Double {
    guard let r = NumberText.double(value), r > 0, r <= GeofenceValidator.maximumRadiusMeters
    else {
      throw UsageError(
        "--radius needs a number of metres in (0, 20037509] (half the WGS84 equator), "
          + "got '\(value)'")
    }
    return r
  }
}
