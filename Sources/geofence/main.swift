#if canImport(Glibc)
  @preconcurrency import Glibc
#endif

// A closed pipe is an output error to report (exit 74), not a signal that kills the process.
signal(SIGPIPE, SIG_IGN)
fixMappedBlockThreshold()
let status = await GeofenceCommand.main(Array(CommandLine.arguments.dropFirst()))
// What `print` wrote goes through C's buffered standard output: a write that failed (a full
// disk, a closed pipe) is reported here, so no command ends with 0 while its output was lost.
// Read once the command is done, on the main thread alone.
let output = stdout
let flushed = fflush(output) == 0
if !flushed || ferror(output) != 0 {
  let reason = flushed ? "a write failed" : String(cString: strerror(errno))
  printError("geofence: cannot write to standard output: \(reason)")
  exit(status == 0 ? ExitStatus.ioError : status)
}
exit(status)
