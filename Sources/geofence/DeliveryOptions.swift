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
    var names: Set<String> = []
    var webhooks = 0
    var files = 0
    for spec in given {
      let (kind, value): (String, String?) = {
        guard let eq = spec.firstIndex(of: "=") else { return (spec, nil) }
        return (String(spec[..<eq]), String(spec[spec.index(after: eq)...]))
      }()
      switch (kind, value) {
      case ("server", nil): server = true
      case ("stdout", nil):
        destinations.append(.standardOutput)
        names.insert("stdout")
      case ("webhook", let url?):
        guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(),
          scheme == "http" || scheme == "https", parsed.host?.isEmpty == false
        else {
          throw UsageError("--destination webhook=URL needs an http or https URL, got '\(url)'")
        }
        guard let secret = args.last("webhook-secret") ?? secretFromEnvironment, !secret.isEmpty
        else {
          throw UsageError(
            "--destination webhook=URL needs --webhook-secret S or $GEOFENCE_WEBHOOK_SECRET")
        }
        webhooks += 1
        destinations.append(
          .webhook(
            WebhookConfiguration(
              url: parsed, secret: secret, name: webhooks == 1 ? "webhook" : "webhook\(webhooks)")))
      case ("file", let path?) where !path.isEmpty:
        files += 1
        destinations.append(
          .jsonLinesFile(
            JSONLinesFileConfiguration(
              path: path, maximumFileBytes: maximumFileBytes,
              name: files == 1 ? "file" : "file\(files)")))
      default:
        throw UsageError(
          "--destination takes server, webhook=URL, file=PATH or stdout, got '\(spec)'")
      }
    }
    if names.count < destinations.filter({ $0 == .standardOutput }).count {
      throw UsageError("--destination stdout given twice")
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
}
