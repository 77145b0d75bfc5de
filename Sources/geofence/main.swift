#if canImport(Glibc)
  import Glibc
#endif

exit(await GeofenceCommand.main(Array(CommandLine.arguments.dropFirst())))
