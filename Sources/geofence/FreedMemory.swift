/// Returns the heap's free pages to the system (glibc's `malloc_trim(0)`).
///
/// Reading a definition file allocates and frees millions of small blocks (one per field and
/// row); glibc keeps the freed pages mapped, so a process that has built its geofence set would
/// otherwise stay at its loading peak. Called once the engine holds the set. Does nothing where
/// glibc is not the allocator.
func releaseFreedMemory() {
  #if os(Linux)
    _ = glibcMallocTrim(0)
  #endif
}

#if os(Linux)
  /// glibc's `int malloc_trim(size_t pad)` (`<malloc.h>`, which the Glibc module does not
  /// export).
  @_silgen_name("malloc_trim")
  private func glibcMallocTrim(_ pad: Int) -> Int32
#endif
