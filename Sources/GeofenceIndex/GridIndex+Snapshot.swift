import BinarySnapshot

extension GridIndex {
  /// Appends the index to a snapshot: every table as its bytes (see
  /// ``BinarySnapshot/BinarySnapshot``), so that ``init(snapshot:)`` restores it without a
  /// build.
  /// - Complexity: O(n) copies of the index's bytes.
  public func write(to writer: inout SnapshotWriter) {
    writer.write(array: discs)
    writer.write(array: slotOfStored)
    writer.write(everywhereStart)
    writer.write(array: everywhereBands)
    writer.write(everywhereSpan)
    writer.write(filedEnd)
    writer.write(requestedCellSizeDegrees)
    writer.write(array: storedOfSlot)
    writer.write(removedCount)
    writer.write(pendingCount)
    writer.write(grid)
    writer.write(nonEmptyLevels)
    writer.write(denseLevels)
    writer.write(array: levelTables)
    writer.write(array: offsets)
    writer.write(array: rankWords)
    writer.write(soleLevel)
    writer.write(soleTable)
    writer.write(offsetRunMask)
    writer.write(array: cells)
    writer.write(usedCellCount)
    writer.write(array: entries)
    writer.write(entryIndexMask)
    writer.write(entryQuarterBits)
  }

  /// The index ``write(to:)`` wrote, read back as it was: the same answers to every query.
  /// - Throws: ``BinarySnapshot/SnapshotError`` when the bytes end early, a table's element
  ///   layout differs from this build's, or a count or reference is out of range (the
  ///   storage maps, the entries' region indices, the cell runs and offsets are checked).
  /// - Complexity: O(n) copies, plus one pass over the entries, offsets and cells.
  public init(snapshot reader: inout SnapshotReader) throws(SnapshotError) {
    discs = try reader.readArray()
    slotOfStored = try reader.readArray()
    everywhereStart = try reader.read()
    everywhereBands = try reader.readArray()
    everywhereSpan = try reader.read()
    filedEnd = try reader.read()
    requestedCellSizeDegrees = try reader.read()
    storedOfSlot = try reader.readArray()
    removedCount = try reader.read()
    pendingCount = try reader.read()
    grid = try reader.read()
    nonEmptyLevels = try reader.read()
    denseLevels = try reader.read()
    levelTables = try reader.readArray()
    offsets = try reader.readArray()
    rankWords = try reader.readArray()
    soleLevel = try reader.read()
    soleTable = try reader.read()
    offsetRunMask = try reader.read()
    cells = try reader.readArray()
    usedCellCount = try reader.read()
    entries = try reader.readArray()
    entryIndexMask = try reader.read()
    entryQuarterBits = try reader.read()
    try checkSnapshotReferences()
  }

  /// The references a query follows without a check: each must point inside its table.
  private func checkSnapshotReferences() throws(SnapshotError) {
    let n = discs.count
    guard slotOfStored.count == n, storedOfSlot.isEmpty || storedOfSlot.count == n,
      0 <= filedEnd, filedEnd <= everywhereStart, everywhereStart <= n,
      everywhereBands.count == n - everywhereStart || everywhereBands.count <= n,
      removedCount >= 0, pendingCount >= 0, removedCount <= n, pendingCount <= n - removedCount,
      offsetRunMask == GridIndex.offsetRunBits(entryCount: entries.count)
    else { throw .layout("grid index counts") }
    guard slotOfStored.allSatisfy({ Int($0) < n }), storedOfSlot.allSatisfy({ Int($0) < n }),
      entries.allSatisfy({ Int($0 & entryIndexMask) < n }),
      offsets.allSatisfy({ Int($0 & offsetRunMask) <= entries.count }),
      cells.allSatisfy({
        $0.key == CellSlot.emptyKey || Int($0.start) + Int($0.count) <= entries.count
      })
    else { throw .layout("grid index references") }
  }
}
