#if canImport(Glibc)
  import Glibc
#endif

exit(GeofenceCommand.main(Array(CommandLine.arguments.dropFirst())))
