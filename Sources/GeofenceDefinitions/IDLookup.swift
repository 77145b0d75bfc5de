import BinarySnapshot

/// The row (or slot) of each geofence id in a column of ids: an open-addressing table of row
/// numbers (linear probing, at most half full), keyed by the id's hash and compared with the
/// ids the column already holds, so that no id is stored twice. The definition readers use
/// it to find duplicate ids, and the engine keeps the same table as its slot-by-id lookup.
/// Rows the owner retires stay in the table and are skipped by ``find(_:in:isLive:)``; the
/// table is rebuilt from the rows it holds when it fills.
///
/// 4 bytes a bucket, 2–4 buckets a row, where a `[String: Int32]` takes about 27 B a row.
///
/// Ids are hashed with a seed drawn at random when the table is made (a file of ids chosen to
/// collide cannot be prepared in advance) and kept with it, so that a snapshot restores the
/// table as it was.
public struct IDLookup: Sendable {
  private var buckets: [Int32]
  private var used = 0
  private var seed: UInt64

  /// An empty table with room for `expectedCount` rows before it grows.
  public init(expectedCount: Int = 0) {
    buckets = Self.emptyBuckets(Self.capacity(for: expectedCount))
    var random = SystemRandomNumberGenerator()
    seed = random.next()
  }

  /// Number of rows the table holds.
  public var count: Int { used }

  /// Heap bytes of the table, by capacity.
  public var footprintBytes: Int { buckets.capacity * MemoryLayout<Int32>.stride }

  /// Appends the table to a snapshot.
  public func write(to writer: inout SnapshotWriter) {
    writer.write(array: buckets)
    writer.write(used)
    writer.write(seed)
  }

  /// The table ``write(to:)`` wrote, for a column of `rowCount` rows.
  /// - Throws: ``BinarySnapshot/SnapshotError/layout(_:)`` when the table cannot be one.
  public init(snapshot reader: inout SnapshotReader, rowCount: Int) throws(SnapshotError) {
    buckets = try reader.readArray()
    used = try reader.read()
    seed = try reader.read()
    guard buckets.count >= 16, buckets.count & (buckets.count - 1) == 0,
      used >= 0, used <= buckets.count / 2, buckets.allSatisfy({ $0 < Int32(rowCount) })
    else { throw .layout("id lookup") }
  }

  /// `n` empty buckets, a large table backed by huge pages where the system allows it
  /// (``BinarySnapshot/SnapshotReader/preferHugePages(_:byteCount:)``): its buckets are read
  /// at random, one TLB miss each with 4 KiB pages once the table outgrows the TLB's reach.
  private static func emptyBuckets(_ n: Int) -> [Int32] {
    [Int32](unsafeUninitializedCapacity: n) { buffer, initialized in
      if let base = buffer.baseAddress {
        SnapshotReader.preferHugePages(UnsafeMutableRawPointer(base), byteCount: n * 4)
      }
      buffer.initialize(repeating: -1)
      initialized = n
    }
  }

  private static func capacity(for n: Int) -> Int {
    var c = 16
    while c < 2 * n { c <<= 1 }
    return c
  }

  /// The seeded hash of `id`, equal for ids that `String` compares equal: the hash of its
  /// UTF-8 bytes when they are ASCII (then equal ids have equal bytes), else of the bytes of its
  /// NFC form (Unicode Standard Annex #15), since `String` equality is canonical equivalence:
  /// `"caf\u{E9}"` and `"cafe\u{301}"` are one id, and must meet in one probe sequence. The NFC
  /// form comes from the standard library's own normalisation (`_nfcCodeUnits`, what its
  /// comparison uses), so the two cannot disagree.
  private func hash(_ id: String) -> Int {
    var id = id
    let seed = self.seed
    let bytes = id.withUTF8 { utf8 in Self.hash(UnsafeRawBufferPointer(utf8), seed: seed) }
    if bytes.isASCII { return bytes.hash }
    let nfc = Array(id._nfcCodeUnits)
    return nfc.withUnsafeBytes { Self.hash($0, seed: seed).hash }
  }

  /// 8 bytes a step multiplied by the 64-bit golden ratio, then MurmurHash3's finaliser; and
  /// whether every byte is ASCII.
  @inline(__always)
  private static func hash(_ raw: UnsafeRawBufferPointer, seed: UInt64) -> (
    hash: Int, isASCII: Bool
  ) {
    var h = seed ^ UInt64(raw.count)
    var high: UInt64 = 0
    var i = 0
    while i + 8 <= raw.count {
      let word = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
      high |= word
      h = (h ^ word) &* 0x9E37_79B9_7F4A_7C15
      h = h << 31 | h >> 33
      i += 8
    }
    var tail: UInt64 = 0
    while i < raw.count {
      tail = tail << 8 | UInt64(raw[i])
      high |= UInt64(raw[i])
      i += 1
    }
    return (
      Int(truncatingIfNeeded: BinarySnapshot.mix(h ^ tail)), high & 0x8080_8080_8080_8080 == 0
    )
  }

  /// Adds `row`, keyed by `ids[row]`.
  /// - Complexity: O(1) expected (amortised over the rebuilds that double the table).
  public mutating func insert(_ row: Int32, ids: [String]) {
    if 2 * (used + 1) > buckets.count { rebuild(adding: used + 1, ids: ids) }
    place(row, hash: hash(ids[Int(row)]))
    used += 1
  }

  /// The row holding `id`; or, when no row does, nil, after appending `id` to `ids` as a new
  /// row and adding that row: ``find(_:in:isLive:)`` then ``insert(_:ids:)`` with the id
  /// hashed once, for a reader that keeps the first definition of each id.
  /// - Complexity: O(1) expected (amortised over the rebuilds that double the table).
  mutating func findOrAppend(_ id: String, to ids: inout [String]) -> Int32? {
    findOrAppend(id, probe: firstProbe(hash: hash(id)), to: &ids)
  }

  /// Where the search for an id starts: its hash, its first bucket and what that bucket held
  /// when read. A reader takes it (``probe(asciiUTF8:)``) as soon as it knows the id's bytes,
  /// so that the bucket's cache miss overlaps the rest of the row's work; it is valid until
  /// the table next changes.
  struct Probe {
    var hash: Int
    var bucket: Int
    var row: Int32
  }

  /// The probe of an id given as UTF-8 bytes, when every byte is ASCII (then its hash is that
  /// of the `String` of those bytes); nil otherwise. O(n) in the bytes; no allocation.
  func probe(asciiUTF8 bytes: UnsafeBufferPointer<UInt8>) -> Probe? {
    let (hash, isASCII) = Self.hash(UnsafeRawBufferPointer(bytes), seed: seed)
    return isASCII ? firstProbe(hash: hash) : nil
  }

  private func firstProbe(hash: Int) -> Probe {
    let b = hash & (buckets.count - 1)
    return Probe(hash: hash, bucket: b, row: buckets[b])
  }

  /// ``findOrAppend(_:to:)`` from a probe of `id` taken since the table last changed.
  mutating func findOrAppend(_ id: String, probe: Probe, to ids: inout [String]) -> Int32? {
    let hash = probe.hash
    let mask = buckets.count - 1
    var b = probe.bucket
    var held = probe.row
    while true {
      if held < 0 { break }
      if ids[Int(held)] == id { return held }
      b = (b + 1) & mask
      held = buckets[b]
    }
    let row = Int32(ids.count)
    ids.append(id)
    // `b` is the empty bucket `insert` would take, unless the table is rebuilt first.
    if 2 * (used + 1) > buckets.count {
      rebuild(adding: used + 1, ids: ids)
      place(row, hash: hash)
    } else {
      buckets[b] = row
    }
    used += 1
    return nil
  }

  /// ``findOrAppend(_:to:)`` for each of `newIDs` in turn, calling `duplicate` with the index
  /// in `newIDs` and the row holding the id of each one not appended. Ids are taken 32 at a
  /// time: all hashed, then the first bucket of each read, then the id of each row found
  /// there compared, before any is looked up in turn, so that the cache misses of a table
  /// (and a column of ids) larger than the caches overlap instead of following one another.
  /// - Complexity: O(n) expected for n ids (amortised over the rebuilds that double the
  ///   table); no allocation but the growth of the table and of `ids`.
  mutating func findOrAppend(
    contentsOf newIDs: [String], to ids: inout [String], duplicate: (Int, Int32) -> Void
  ) {
    /// What is known of one id of a batch before it is looked up in turn.
    struct Ahead {
      var hash: Int
      /// What its first bucket held when the batch was read.
      var row: Int32
      /// Whether the id of `row` (when not −1) is this id.
      var same: Bool
    }
    let batch = 32
    withUnsafeTemporaryAllocation(of: Ahead.self, capacity: batch) { ahead in
      var start = 0
      while start < newIDs.count {
        let count = Swift.min(batch, newIDs.count - start)
        // Room for the whole batch first: no rebuild moves a bucket read below.
        if 2 * (used + count) > buckets.count { rebuild(adding: used + count, ids: ids) }
        let mask = buckets.count - 1
        for k in 0..<count {
          ahead.initializeElement(
            at: k, to: Ahead(hash: hash(newIDs[start + k]), row: -1, same: false))
        }
        for k in 0..<count { ahead[k].row = buckets[ahead[k].hash & mask] }
        for k in 0..<count where ahead[k].row >= 0 {
          ahead[k].same = ids[Int(ahead[k].row)] == newIDs[start + k]
        }
        for k in 0..<count {
          // A bucket found taken stays taken, its row's id as compared; any other id is
          // looked up from a probe taken now (its bucket may have been taken since, by an id
          // of this batch), its lines in the cache by then.
          if ahead[k].row >= 0 && ahead[k].same {
            duplicate(start + k, ahead[k].row)
          } else if let first = findOrAppend(
            newIDs[start + k], probe: firstProbe(hash: ahead[k].hash), to: &ids)
          {
            duplicate(start + k, first)
          }
        }
        start += count
      }
    }
  }

  private mutating func place(_ row: Int32, hash: Int) {
    let mask = buckets.count - 1
    var b = hash & mask
    while buckets[b] >= 0 { b = (b + 1) & mask }
    buckets[b] = row
  }

  /// Grows the table, keeping every row it holds, so that it takes `n` rows in all before
  /// it grows again (as ``init(expectedCount:)`` sizes a new one). `ids` is the column the
  /// rows index.
  /// - Complexity: O(r) for the r rows held when it grows, else O(1).
  mutating func reserveCapacity(_ n: Int, ids: [String]) {
    let capacity = Self.capacity(for: n)
    if capacity > buckets.count { rebuild(bucketCount: capacity, ids: ids) }
  }

  /// Rebuilds for at least `n` entries, keeping every row it held (retired ones too: the
  /// caller skips them, and the table does not know which they are).
  private mutating func rebuild(adding n: Int, ids: [String]) {
    rebuild(bucketCount: Self.capacity(for: 2 * n), ids: ids)
  }

  private mutating func rebuild(bucketCount: Int, ids: [String]) {
    let old = buckets
    buckets = Self.emptyBuckets(bucketCount)
    for row in old where row >= 0 { place(row, hash: hash(ids[Int(row)])) }
  }

  /// The row holding `id` for which `isLive` is true, or nil.
  /// - Complexity: O(1) expected; no allocation.
  @inline(__always)
  public func find(_ id: String, in ids: [String], isLive: (Int32) -> Bool = { _ in true })
    -> Int32?
  {
    let mask = buckets.count - 1
    var b = hash(id) & mask
    while true {
      let row = buckets[b]
      if row < 0 { return nil }
      if ids[Int(row)] == id && isLive(row) { return row }
      b = (b + 1) & mask
    }
  }
}
