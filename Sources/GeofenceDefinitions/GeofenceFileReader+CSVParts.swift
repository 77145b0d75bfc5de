import DelimitedText
import ConcurrentParts

extension GeofenceFileReader {
  /// Reads the data rows of a large CSV file on two threads (see ``CSVParts``): the earlier
  /// part into `accumulator` as ``readCSV(_:into:rows:)`` reads every row, the later part into
  /// an accumulator of its own with its ids unchecked (``GeofenceColumns/IDCheck/deferred``),
  /// the later part then held in ``GeofenceLoadAccumulator/heldPart`` for
  /// ``GeofenceLoadAccumulator/joinHeldPart()``, which appends its rows, their ids checked
  /// then (``GeofenceLoadResult/append(deferredPart:)``). The result is the one reading every
  /// row on one thread gives: the same rows, rejections and line numbers.
  /// - Parameters:
  ///   - bytes: the whole file, as UTF-8.
  ///   - parts: where its data rows start and are cut.
  ///   - reader: the reader the header gave; each thread reads with a copy.
  /// - Returns: the issues ``DelimitedText/DelimitedText/forEachRecord(utf8:delimiter:firstLine:_:)``
  ///   found in the rows, in line order.
  /// - Complexity: O(n) in the file's size, the later part's id lookups after both parts
  ///   are read. Holds the later part's columns (about 44 bytes a row and its names and
  ///   metadata) until they are appended, each released once copied.
  static func readCSVParts(
    _ bytes: UnsafeBufferPointer<UInt8>, _ parts: CSVParts, reader: CSVRowReader,
    delimiter: UInt8, into accumulator: inout GeofenceLoadAccumulator
  ) -> [DelimitedTextIssue] {
    let file = accumulator.file
    let defaultRadiusMeters = accumulator.defaultRadiusMeters
    let earlierBytes = UnsafeBufferPointer(rebasing: bytes[parts.start..<parts.split])
    let laterBytes = UnsafeBufferPointer(rebasing: bytes[parts.split...])
    // Both parts' columns are allocated here, on the calling thread: memory a worker thread
    // allocates comes from that thread's own malloc arena, where, once freed by the join, it
    // stays resident and unused by the index build that follows (8 B a geofence at 1M).
    // Room for both parts' rows in the earlier part's, so that the join does not grow them.
    accumulator.reserveCapacity(
      rowCapacity(lineFeeds: parts.earlierLineFeeds + parts.laterLineFeeds + 1, bytes: bytes.count)
    )
    if reader.layout.hasDetails {
      accumulator.result.columns.detailText.reserveCapacity(bytes.count)
    }
    var later = GeofenceLoadAccumulator(
      file: file, defaultRadiusMeters: defaultRadiusMeters, ids: .deferred)
    later.reserveCapacity(rowCapacity(lineFeeds: parts.laterLineFeeds + 1, bytes: laterBytes.count))
    if reader.layout.hasDetails {
      later.result.columns.detailText.reserveCapacity(laterBytes.count)
    }
    let issues = withUnsafeMutablePointer(to: &accumulator) { earlier in
      withUnsafeMutablePointer(to: &later) { later in
        ConcurrentParts.perform(2) { p -> [DelimitedTextIssue] in
          var rows = reader
          if p == 0 {
            return DelimitedText.forEachRecord(utf8: earlierBytes, delimiter: delimiter) {
              fields, line in
              rows.read(fields, line: line, into: &earlier.pointee)
            }
          }
          return DelimitedText.forEachRecord(
            utf8: laterBytes, delimiter: delimiter, firstLine: parts.laterFirstLine
          ) { fields, line in
            rows.read(fields, line: line, into: &later.pointee)
          }
        }
      }
    }
    // Taken out, so that the join holds the only reference to each of its columns.
    accumulator.heldPart = ((consume later).result, [])
    return issues[0] + issues[1]
  }

  /// Where a CSV file's data rows are cut in two for ``readCSVParts(_:_:reader:delimiter:into:)``,
  /// and how many lines each part has.
  ///
  /// A file is cut only when reading it in parts gives what reading it whole gives: its data
  /// rows take at least ``CSVReadThreads/minimumBytes``, and neither they nor the header line
  /// hold a `"` (a quoted field may hold a line end, so a line end would not surely end a
  /// record). Then every LF, CR LF or lone CR ends a record or a blank line, the header is the
  /// first line, and a part that starts after a line end starts on line 1 plus the line ends
  /// before it.
  struct CSVParts {
    /// Share of the data rows' bytes in the earlier part: a third. Its thread also looks
    /// its ids up, and the later part's ids are looked up after both parts are read, so the
    /// parts take about as long with the earlier one shorter (`tools/bench/README.md`, "Loading,
    /// round five").
    static let earlierShare = 0.33

    /// The first byte of the data rows: the LF or CR that ends the header line.
    var start: Int
    /// The first byte of the later part, just after a line end.
    var split: Int
    /// The line the later part starts on.
    var laterFirstLine: Int
    /// LF bytes in each part (at least its records, less one when the last has no line end).
    var earlierLineFeeds: Int
    var laterLineFeeds: Int

    /// The cut of `bytes` (a whole file, as UTF-8) whose header line ends at `headerEnd`, or
    /// nil when it must be read on one thread.
    /// - Complexity: O(n) in the bytes (``scan(_:)``, both parts at once); no allocation but
    ///   the threads'.
    init?(_ bytes: UnsafeBufferPointer<UInt8>, headerEnd: Int) {
      let quote = UInt8(ascii: "\"")
      let lf = UInt8(ascii: "\n")
      let cr = UInt8(ascii: "\r")
      let n = bytes.count
      guard CSVReadThreads.maximumParts >= 2, headerEnd > 0,
        n - headerEnd >= Swift.max(CSVReadThreads.minimumBytes, 2),
        !bytes[..<headerEnd].contains(quote)
      else { return nil }
      let middle = headerEnd + Int(Double(n - headerEnd) * Self.earlierShare)
      // After a line end: an LF, a CR LF pair or a lone CR.
      guard let lineEnd = bytes[middle...].firstIndex(where: { $0 == lf || $0 == cr }) else {
        return nil
      }
      var split = lineEnd + 1
      if bytes[lineEnd] == cr && split < n && bytes[split] == lf { split += 1 }
      guard split < n else { return nil }
      let scans = ConcurrentParts.perform(2) { p in
        Self.scan(
          UnsafeBufferPointer(rebasing: p == 0 ? bytes[headerEnd..<split] : bytes[split...]))
      }
      guard !scans[0].hasQuote, !scans[1].hasQuote else { return nil }
      start = headerEnd
      self.split = split
      // The header line holds no line end, and no CR LF pair spans a cut (the byte before
      // the first is not a CR, and the second follows an LF or a lone CR).
      laterFirstLine = 1 + scans[0].lineEnds
      earlierLineFeeds = scans[0].lineFeeds
      laterLineFeeds = scans[1].lineFeeds
    }

    /// What ``scan(_:)`` counts.
    struct Scan {
      var lineFeeds = 0
      /// LF, CR LF and lone CR line ends, as ``DelimitedText/DelimitedText`` counts lines.
      var lineEnds = 0
      /// True when some byte is `"` (the counts then stop short).
      var hasQuote = false
    }

    /// The line ends of `bytes`, and whether it holds a `"`: 8 bytes a step (a byte equal to
    /// one sought is a zero byte of the word XORed with it; see
    /// ``GeofenceFileReader/lineCount(_:)``), a lone CR found with a second load one byte on,
    /// the counts kept a byte lane each for up to 255 steps, then added up. Stops short at a
    /// quote. A CR at the very end counts as a lone CR.
    /// - Complexity: O(n); no allocation.
    static func scan(_ bytes: UnsafeBufferPointer<UInt8>) -> Scan {
      let raw = UnsafeRawBufferPointer(bytes)
      let n = raw.count
      let lows: UInt64 = 0x7F7F_7F7F_7F7F_7F7F
      let ones: UInt64 = 0x0101_0101_0101_0101
      // The high bit of each byte set exactly when that byte of `x` is zero.
      @inline(__always) func zeroBytes(_ x: UInt64) -> UInt64 {
        ~(((x & lows) &+ lows) | x | lows)
      }
      // The sum of the eight byte lanes of `x`.
      @inline(__always) func laneSum(_ x: UInt64) -> Int {
        let pairs = (x & 0x00FF_00FF_00FF_00FF) &+ ((x >> 8) & 0x00FF_00FF_00FF_00FF)
        return Int(truncatingIfNeeded: (pairs &* 0x0001_0001_0001_0001) >> 48)
      }
      let lfs = ones &* 0x0A
      let crs = ones &* 0x0D
      let quotes = ones &* 0x22
      var lineFeeds = 0
      var loneCRs = 0
      var i = 0
      // Each step reads 9 bytes: its word, and the byte after it.
      while i &+ 9 <= n {
        let end = Swift.min(n &- 1, i &+ 255 &* 8)
        var lf: UInt64 = 0
        var cr: UInt64 = 0
        var quote: UInt64 = 0
        while i &+ 8 <= end {
          let x = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
          let y = raw.loadUnaligned(fromByteOffset: i &+ 1, as: UInt64.self)
          quote |= zeroBytes(x ^ quotes)
          lf &+= zeroBytes(x ^ lfs) >> 7
          cr &+= (zeroBytes(x ^ crs) & ~zeroBytes(y ^ lfs)) >> 7
          i &+= 8
        }
        if quote != 0 { return Scan(hasQuote: true) }
        lineFeeds &+= laneSum(lf)
        loneCRs &+= laneSum(cr)
      }
      while i < n {
        switch raw[i] {
        case 0x22: return Scan(hasQuote: true)
        case 0x0A: lineFeeds &+= 1
        case 0x0D: if i + 1 == n || raw[i + 1] != 0x0A { loneCRs &+= 1 }
        default: break
        }
        i &+= 1
      }
      return Scan(lineFeeds: lineFeeds, lineEnds: lineFeeds + loneCRs)
    }
  }
}

/// How a large CSV file's data rows are shared between threads
/// (``GeofenceFileReader/readCSVParts(_:_:reader:delimiter:into:)``): two parts at most, each
/// on its own thread (``ConcurrentParts/ConcurrentParts/perform(_:_:)``), the calling thread waiting for
/// both. The result never depends on the cut.
///
/// Two at most: the machines the loads are measured on have two cores, and each part holds
/// columns of its own until they are joined, so more parts would raise the peak memory of a
/// load.
enum CSVReadThreads {
  /// Most parts a file is cut into: 2, or 1 for a read on the calling thread alone, as tests
  /// compare: `CSVReadThreads.$maximumParts.withValue(1) { ... }`.
  @TaskLocal static var maximumParts = 2

  /// Bytes of data rows a file must have to be cut: 4 MiB (about 60,000 rows of an id and a
  /// circle). A smaller file reads in tens of milliseconds, where starting the threads and
  /// joining the parts would take a good share of the gain. Tests lower it to cut small files.
  @TaskLocal static var minimumBytes = 4 << 20
}
