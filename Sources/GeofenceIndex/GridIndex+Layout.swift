import GeofenceGeometry

/// How the non-empty cells of each level are stored, by position in the level's rectangle of
/// occupied cells (no hashing) or in the open-addressing hash table:
///
/// - **by position**: CSR offsets for every position (4 bytes a position), when the rectangle
///   has at most 6 positions per non-empty cell;
/// - **ranked**: one occupancy bit a position with a running count every 64 positions
///   (``RankWord``, 16 bytes a word) and offsets for the non-empty cells only (4 bytes a cell),
///   when that costs no more than hashing the cells would (about 24 bytes a hashed cell): a
///   lookup is one word, a population count and the offsets;
/// - **by position beyond that**, coarsest levels first, while the rectangles stay within an
///   allowance of `2 n + 65,536` extra positions (at most 8 bytes a region plus 256 KiB);
/// - **hashed** otherwise (the finest levels of sets spread over the whole sphere).
///
/// Both kinds by position count as dense (``GridIndex/denseLevels``).
internal struct CellLayout {
  /// Bits of the dense levels.
  private(set) var denseLevels: UInt64 = 0
  /// Level → rectangle (``LevelTable/none`` for levels that are not dense).
  private(set) var levelTables: [LevelTable]
  /// Number of runs (non-empty cells) over all levels.
  private(set) var cellCount = 0
  /// Number of runs in levels that are not dense.
  private(set) var hashedCellCount = 0
  /// Total length of the offset array (one more than the positions of each dense level, or
  /// than the non-empty cells of each ranked level).
  private(set) var offsetCount = 0
  /// Total length of the rank-word array (64 positions a word, over the ranked levels).
  private(set) var wordCount = 0
  /// Non-empty cells per level.
  private(set) var levelRuns: [Int] = []

  /// Extra dense positions allowed beyond the memory-neutral ones: `2 n + 65,536`.
  static func allowance(regionCount n: Int) -> Int { 2 * n + 65_536 }

  /// Chooses the layout from the runs of the sorted cell keys of every (cell, region) entry.
  /// - Complexity: O(c) for `c` cells.
  init(runs keyRuns: KeyRuns, grid: CellGrid, regionCount: Int) {
    let keys = keyRuns.keys
    let levelCount = grid.levelCount
    var rowLow = [Int](repeating: .max, count: levelCount)
    var rowHigh = [Int](repeating: -1, count: levelCount)
    var columnLow = [Int](repeating: .max, count: levelCount)
    var columnHigh = [Int](repeating: -1, count: levelCount)
    var runs = [Int](repeating: 0, count: levelCount)
    var previous = CellSlot.emptyKey
    for key in keys where key != previous {
      previous = key
      let (level, row, column) = CellLayout.split(key)
      runs[level] += 1
      rowLow[level] = min(rowLow[level], row)
      rowHigh[level] = max(rowHigh[level], row)
      columnLow[level] = min(columnLow[level], column)
      columnHigh[level] = max(columnHigh[level], column)
    }
    levelRuns = runs
    levelTables = Array(repeating: .none, count: levelCount)
    var allowance = CellLayout.allowance(regionCount: regionCount)
    for level in (0..<levelCount).reversed() where runs[level] > 0 {
      cellCount += runs[level]
      let rows = rowHigh[level] - rowLow[level] + 1
      let columns = columnHigh[level] - columnLow[level] + 1
      let positions = rows.multipliedReportingOverflow(by: columns)
      var dense = false
      var ranked = false
      if !positions.overflow && positions.partialValue < Int(UInt32.max) / 2 {
        let p = positions.partialValue
        if p <= 6 * runs[level] {
          dense = true
        } else if p / 4 <= 20 * runs[level] {
          // One bit a position (16 bytes a word of 64) plus 4 bytes a cell: cheaper than a
          // hashed cell (about 24 bytes), and no probing.
          ranked = true
        } else if p <= allowance {
          allowance -= p
          dense = true
        }
      }
      if dense {
        denseLevels |= 1 &<< UInt64(level)
        levelTables[level] = LevelTable(
          rowLow: rowLow[level], columnLow: columnLow[level], rowCount: rows,
          columnCount: columns, base: offsetCount)
        offsetCount += positions.partialValue + 1
      } else if ranked {
        denseLevels |= 1 &<< UInt64(level)
        levelTables[level] = LevelTable(
          rowLow: rowLow[level], columnLow: columnLow[level], rowCount: rows,
          columnCount: columns, base: offsetCount, wordBase: wordCount)
        offsetCount += runs[level] + 1
        wordCount += (positions.partialValue + 63) / 64
      } else {
        hashedCellCount += runs[level]
      }
    }
  }

  /// Level, row and column of a cell id.
  static func split(_ key: UInt64) -> (level: Int, row: Int, column: Int) {
    let mask: UInt64 = (1 << 29) - 1
    return (Int(key >> 58), Int((key >> 29) & mask), Int(key & mask))
  }

  /// The CSR offsets of the dense levels and the rank words of the ranked ones, from the runs
  /// of the sorted keys (a level's keys are sorted by row, then column: the order of
  /// positions).
  func offsets(runs: KeyRuns) -> (offsets: [UInt32], words: [RankWord]) {
    var offsets = [UInt32](repeating: 0, count: offsetCount)
    var words = [RankWord](repeating: RankWord(bits: 0, rank: 0), count: wordCount)
    // For each dense level, the next position (by position) or cell (ranked) whose offset is
    // not yet written.
    var next = [Int](repeating: 0, count: levelTables.count)
    var current = -1
    func finish(_ level: Int, at end: Int) {
      let t = levelTables[level]
      let last = t.wordBase >= 0 ? next[level] : t.rowCount * t.columnCount
      for p in next[level]...last { offsets[t.base + p] = UInt32(truncatingIfNeeded: end) }
      if t.wordBase >= 0 {
        // Ranks: set bits before each word.
        var rank: UInt32 = 0
        for w in t.wordBase..<(t.wordBase + (t.rowCount * t.columnCount + 63) / 64) {
          words[w].rank = rank
          rank &+= UInt32(words[w].bits.nonzeroBitCount)
        }
      }
    }
    for (i, key) in runs.keys.enumerated() {
      let e = runs.start(i)
      let (level, row, column) = CellLayout.split(key)
      if level != current {
        if current >= 0 && denseLevels & (1 << UInt64(current)) != 0 { finish(current, at: e) }
        current = level
      }
      guard denseLevels & (1 << UInt64(level)) != 0 else { continue }
      let t = levelTables[level]
      let position = (row - t.rowLow) * t.columnCount + (column - t.columnLow)
      if t.wordBase >= 0 {
        words[t.wordBase + position >> 6].bits |= 1 << UInt64(position & 63)
        offsets[t.base + next[level]] = UInt32(truncatingIfNeeded: e)
        next[level] += 1
        continue
      }
      while next[level] <= position {
        offsets[t.base + next[level]] = UInt32(truncatingIfNeeded: e)
        next[level] += 1
      }
    }
    if current >= 0 && denseLevels & (1 << UInt64(current)) != 0 {
      finish(current, at: runs.total)
    }
    return (offsets, words)
  }

  /// Sets, in the top four bits of the offsets of `level`'s cells (when dense and above level
  /// 0), the bits of the sub-cells (the four cells of `level - 1` inside each cell) that `box`
  /// touches. A query skips a cell whose bit for its own sub-cell is clear: no region filed
  /// there has a box reaching the point. Bits set for a sub-cell outside the level's rectangle
  /// are dropped; a bit set needlessly (a box wrapping the antimeridian at the finer level but
  /// not at `level`) only costs a refine.
  func markSubcells(
    of box: BoundingBox, level: Int, in grid: CellGrid, offsets: UnsafeMutableBufferPointer<UInt32>,
    words: UnsafeBufferPointer<RankWord>
  ) {
    guard level >= 1, denseLevels & (1 &<< UInt64(level)) != 0 else { return }
    let t = levelTables[level]
    let sub = GridIndex.cells(of: box, level: level - 1, in: grid)
    func mark(_ row: Int, _ column: Int) {
      let r = (row >> 1) - t.rowLow
      let c = (column >> 1) - t.columnLow
      guard (0..<t.rowCount).contains(r) && (0..<t.columnCount).contains(c) else { return }
      let k = t.offsetIndex(position: r * t.columnCount + c, words: words)
      guard k >= 0 else { return }
      let bit = UInt32(1) << (28 + ((row & 1) << 1 | (column & 1)))
      offsets[k] |= bit
    }
    for row in sub.rowLow...sub.rowHigh {
      for column in sub.columnLow...sub.columnHigh { mark(row, column) }
      if sub.wrapColumnHigh >= 0 {
        for column in 0...sub.wrapColumnHigh { mark(row, column) }
      }
    }
  }

  /// Sets every sub-cell bit of level 0's positions when it is dense (level 0 has no finer
  /// level: its cells are never skipped by mask).
  func markLevelZero(offsets: inout [UInt32]) {
    guard denseLevels & 1 != 0 else { return }
    let t = levelTables[0]
    let cells = t.wordBase >= 0 ? levelRuns[0] : t.rowCount * t.columnCount
    for k in 0..<cells { offsets[t.base + k] |= 0xF000_0000 }
  }

  /// The open-addressing table of the cells of levels that are not dense.
  func hashTable(runs: KeyRuns) -> [CellSlot] {
    let capacity = CellSlot.capacity(forCellCount: hashedCellCount)
    var table = [CellSlot](
      repeating: CellSlot(key: CellSlot.emptyKey, start: 0, count: 0), count: capacity)
    for (i, key) in runs.keys.enumerated() {
      let start = runs.start(i)
      let end = runs.end(i)
      if denseLevels & (1 << (key >> 58)) != 0 { continue }
      var h = CellSlot.home(key, capacity: capacity)
      while table[h].key != CellSlot.emptyKey {
        h += 1
        if h == capacity { h = 0 }
      }
      table[h] = CellSlot(
        key: key, start: UInt32(truncatingIfNeeded: start),
        count: UInt32(truncatingIfNeeded: end - start))
    }
    return table
  }
}
