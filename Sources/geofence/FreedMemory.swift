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

/// Fixes glibc's mmap threshold at 1 MiB (`mallopt(M_MMAP_THRESHOLD, 1 << 20)`), so that every
/// block of 1 MiB or more is its own mapping, given back to the system when freed.
///
/// By default glibc raises the threshold to the size of each mapped block freed (up to 32 MiB),
/// after which such blocks come from the heap, where freed ones stay resident: a load that
/// frees a part's columns (the later part of a file read on two threads) then left the index
/// build that follows 13 MB higher at 1M geofences (191.8 against 178.3 MB peak, 157 against
/// 143 B a geofence). Called once, first thing. Does nothing where glibc is not the
/// allocator.
func fixMappedBlockThreshold() {
  #if os(Linux)
    // M_MMAP_THRESHOLD is -3 in glibc's <malloc.h>.
    _ = glibcMallopt(-3, 1 << 20)
  #endif
}

#if os(Linux)
  /// glibc's `int mallopt(int param, int value)` (`<malloc.h>`).
  @_silgen_name("mallopt")
  private func glibcMallopt(_ parameter: Int32, _ value: Int32) -> Int32

  /// glibc's `int malloc_trim(size_t pad)` (`<malloc.h>`, which the Glibc module does not
  /// export).
  @_silgen_name("malloc_trim")
  private func glibcMallocTrim(_ pad: Int) -> Int32
#endif
