#if canImport(Glibc)
  import Glibc
#endif

// A closed pipe is an output error to report (exit 74), not a signal that kills the process.
signal(SIGPIPE, SIG_IGN)
exit(await GeofenceCommand.main(Array(CommandLine.arguments.dropFirst())))
