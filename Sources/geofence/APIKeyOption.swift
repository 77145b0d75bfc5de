import Foundation
import Networking

/// The API key of `sync`, `run`, `upload` and `stream`: `--key KEY`, else the environment
/// variable `GEOFENCE_API_KEY` (which, unlike an argument, other users cannot read in `ps`).
enum APIKeyOption {
  /// The environment variable read when `--key` is not given.
  static let environmentVariable = "GEOFENCE_API_KEY"

  /// The key given by `--key`, else by ``environmentVariable`` (an empty variable counts as
  /// unset); `nil` when neither gives one.
  /// - Parameter environment: the process's environment (a parameter for tests).
  /// - Throws: ``UsageError`` when the key cannot be sent
  ///   (`Networking.APIKey.problem(_:)`), naming where it came from and never quoting it.
  static func value(
    _ args: CommandLineArguments,
    environment: [String: String] = ProcessInfo.processInfo.environment
  ) throws(UsageError) -> String? {
    let key: String
    let source: String
    if let given = args.last("key") {
      (key, source) = (given, "--key")
    } else if let given = environment[environmentVariable], !given.isEmpty {
      (key, source) = (given, "$" + environmentVariable)
    } else {
      return nil
    }
    if let problem = APIKey.problem(key) {
      throw UsageError("\(source): \(problem); give the key as the server issued it")
    }
    return key
  }
}
