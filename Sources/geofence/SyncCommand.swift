/// `geofence sync`: placeholder until the sync client lands.
enum SyncCommand {
  static func run(_ args: [String]) -> Int32 {
    printError("geofence sync: not available in this build")
    return ExitStatus.software
  }
}
