import EventOutbox
import Foundation
import GeofenceEngine

/// `geofence run`'s destinations, flush policy and sessions (see its help).
struct DeliveryOptions {
  static let valued: Set<String> = [
    "destination", "webhook-secret", "file-max-bytes", "flush-count", "flush-interval",
    "flush-debounce",
  ]
  static let flags: Set<String> = ["flush-on-transition", "no-flush-on-background", "sessions"]

  /// Whether the server's batch API is a destination.
  var server = true
  var destinations: [DestinationConfiguration] = []
  var flushPolicy = FlushPolicy()
  var sessions: SessionConfiguration?

  /// The server alone, the default flush policy, no sessions (`geofence upload`).
  init() {}

  /// - Parameter secretFromEnvironment: `$GEOFENCE_WEBHOOK_SECRET`, used without
  ///   `--webhook-secret`.
  init(_ args: CommandLineArguments, secretFromEnvironment: String?) throws(UsageError) {
    let given = args.all("destination")
    server = given.isEmpty
    let maximumFileBytes = try args.int("file-max-bytes", range: 1...(1 << 40)) ?? 10_485_760
    // Each destination's cursor is named by what it delivers to (the file's absolute path, the
    // webhook's URL without its userinfo), so that a later run with the destinations in another order, or with one
    // left out, continues each from its own place.
    var names: Set<String> = []
    // The file each file destination writes, symbolic links resolved: two paths to one file
    // are one destination, whatever their names.
    var files: [String: String] = [:]
    func claim(_ name: String, spec: String) throws(UsageError) {
      guard names.insert(name).inserted else {
        throw UsageError("--destination \(spec) given twice: every event would be delivered twice")
      }
    }
    func add(_ d: DestinationConfiguration, name: String, spec: String) throws(UsageError) {
      try claim(name, spec: spec)
      destinations.append(d)
    }
    for spec in given {
      let (kind, value): (String, String?) = {
        guard let eq = spec.firstIndex(of: "=") else { return (spec, nil) }
        return (String(spec[..<eq]), String(spec[spec.index(after: eq)...]))
      }()
      switch (kind, value) {
      case ("server", nil):
        try claim("server", spec: spec)
        server = true
      case ("stdout", nil):
        try add(.standardOutput, name: "stdout", spec: spec)
      case ("webhook", let url?):
        // The URL may hold a password: it is shown, and named, without its userinfo.
        let shown = WebhookConfiguration.redacted(url)
        guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(),
          scheme == "http" || scheme == "https", parsed.host?.isEmpty == false
        else {
          throw UsageError("--destination webhook=URL needs an http or https URL, got '\(shown)'")
        }
        if let port = parsed.port, !(1...65_535).contains(port) {
          throw UsageError(
            "--destination webhook=\(shown): port \(port) is out of range (1 to 65535)")
        }
        guard let secret = args.last("webhook-secret") ?? secretFromEnvironment, !secret.isEmpty
        else {
          throw UsageError(
            "--destination webhook=URL needs --webhook-secret S or $GEOFENCE_WEBHOOK_SECRET")
        }
        let name = WebhookConfiguration.cursorName(for: parsed)
        try add(
          .webhook(WebhookConfiguration(url: parsed, secret: secret, name: name)), name: name,
          spec: "webhook=" + shown)
      case ("file", let path?) where !path.isEmpty:
        let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
        try Self.checkWritableFile(absolute, given: path)
        let name = "file:" + absolute
        let resolved = Self.resolvedPath(absolute)
        if !names.contains(name), let earlier = files.updateValue(spec, forKey: resolved) {
          throw UsageError(
            "--destination \(spec) is the same file as --destination \(earlier) (\(resolved)): "
              + "every event would be written twice")
        }
        var file = JSONLinesFileConfiguration(
          path: absolute, maximumFileBytes: maximumFileBytes, name: name)
        // A command runs once: its many flushes together never rotate away what it wrote.
        file.keepsEveryFileItWrote = true
        try add(.jsonLinesFile(file), name: name, spec: spec)
      default:
        throw UsageError(
          "--destination takes server, webhook=URL, file=PATH or stdout, got '\(spec)'")
      }
    }
    if args.last("webhook-secret") != nil, !names.contains(where: { $0.hasPrefix("webhook:") }) {
      throw UsageError("--webhook-secret is given but no --destination webhook=URL")
    }
    if args.last("file-max-bytes") != nil, !names.contains(where: { $0.hasPrefix("file:") }) {
      throw UsageError("--file-max-bytes is given but no --destination file=PATH")
    }
    let flushInterval = try args.double("flush-interval", range: 0...86_400)
    let batchInterval = try args.double("batch-interval", range: 0...86_400)
    let count = try args.int("flush-count", range: 1...100_000_000)
    let debounce = try args.double("flush-debounce", range: 0...86_400)
    flushPolicy = FlushPolicy(
      count: count ?? 20, intervalSeconds: flushInterval ?? batchInterval ?? 30,
      debounceSeconds: debounce,
      immediateOnTransition: args.flag("flush-on-transition"),
      onBackground: !args.flag("no-flush-on-background"))
    if args.flag("sessions") { sessions = SessionConfiguration() }
  }

  /// The file `path` (absolute) names once every symbolic link is followed: `realpath(3)` of
  /// the file when it exists; else, for a dangling link, the path its target would have,
  /// resolved the same way (at most 40 links, as Linux's `MAXSYMLINKS`); else the resolved
  /// directory and the file's name. Two paths with one result write one file. (A hard link
  /// is a file of its own here: it has its own path.)
  /// - Complexity: one `realpath` per link followed.
  static func resolvedPath(_ path: String, links: Int = 40) -> String {
    if let full = realpath(path, nil) {
      defer { free(full) }
      return String(cString: full)
    }
    let manager = FileManager.default
    let directory = (path as NSString).deletingLastPathComponent
    if links > 0, let target = try? manager.destinationOfSymbolicLink(atPath: path) {
      let next =
        target.hasPrefix("/") ? target : (directory as NSString).appendingPathComponent(target)
      return resolvedPath(URL(fileURLWithPath: next).standardizedFileURL.path, links: links - 1)
    }
    let name = (path as NSString).lastPathComponent
    guard let parent = realpath(directory, nil) else { return path }
    defer { free(parent) }
    return (String(cString: parent) as NSString).appendingPathComponent(name)
  }

  /// Checks, before any fix is read, that a file destination can be written: its directory
  /// exists and the path is not a directory.
  static func checkWritableFile(_ path: String, given: String) throws(UsageError) {
    var isDirectory: ObjCBool = false
    if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory),
      isDirectory.boolValue
    {
      throw UsageError("--destination file=\(given): is a directory; give a file path")
    }
    let parent = (path as NSString).deletingLastPathComponent
    guard FileManager.default.fileExists(atPath: parent, isDirectory: &isDirectory),
      isDirectory.boolValue
    else {
      throw UsageError(
        "--destination file=\(given): the directory \(parent) does not exist",
        status: ExitStatus.cannotCreate)
    }
    guard access(parent, W_OK) == 0 else {
      throw UsageError(
        "--destination file=\(given): the directory \(parent) is not writable: "
          + String(cString: strerror(errno)), status: ExitStatus.cannotCreate)
    }
  }
}
