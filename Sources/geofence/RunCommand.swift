/// `geofence run`, `geofence outbox`, `geofence upload`: placeholders until the outbox lands.
enum RunCommand {
  static func run(_ args: [String]) -> Int32 {
    printError("geofence run: not available in this build")
    return ExitStatus.software
  }
  static func outbox(_ args: [String]) -> Int32 {
    printError("geofence outbox: not available in this build")
    return ExitStatus.software
  }
  static func upload(_ args: [String]) -> Int32 {
    printError("geofence upload: not available in this build")
    return ExitStatus.software
  }
}
