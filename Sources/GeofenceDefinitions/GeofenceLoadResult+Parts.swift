/// Joining the two parts of a file read on two threads (``GeofenceFileReader/readCSVParts``):
/// the later part's rows, read with their ids unchecked (``GeofenceColumns/IDCheck/deferred``),
/// are appended to the earlier part's and their ids looked up then, in row order, so that the
/// result is the one reading every row on one thread gives.
extension GeofenceLoadResult {
  /// Appends the rows and rejections of `part`, the rows of the same file after this result's,
  /// read with ``GeofenceColumns/IDCheck/deferred``. Each of its ids is looked up in
  /// ``GeofenceColumns/lookup`` in row order: a row whose id a row before it holds (in this
  /// result, or earlier in `part`) is not appended but rejected with
  /// ``DefinitionProblem/duplicateID(firstDefinedAt:)`` naming that row, as reading the rows
  /// one after the other rejects it. `part`'s rejections, these among them in line order,
  /// follow this result's.
  /// - Precondition: both are CSV rows of one file (no element lines, no truncations), and
  ///   this result's columns check their ids (``GeofenceColumns/IDCheck/rejectingDuplicates``).
  /// - Complexity: O(n) expected in `part`'s rows (an id lookup each, in a table that usually
  ///   does not fit the caches); O(n log n) more in its rejections when some ids are
  ///   duplicates. `part`'s ids are released once looked up, and each other column once
  ///   copied, so that its memory is not held twice.
  mutating func append(deferredPart part: consuming GeofenceLoadResult) {
    precondition(elementLines.isEmpty && part.elementLines.isEmpty && part.truncations.isEmpty)
    let base = count
    let duplicates = columns.append(deferredPart: &part.columns)
    if duplicates.isEmpty {
      positions.append(contentsOf: part.positions)
      rejected += part.rejected
      return
    }
    var isDuplicate = [Bool](repeating: false, count: part.positions.count)
    for d in duplicates { isDuplicate[d.row] = true }
    for (row, position) in part.positions.enumerated() where !isDuplicate[row] {
      positions.append(position)
    }
    let file = files[files.count - 1].name
    var partRejected = part.rejected
    for d in duplicates {
      partRejected.append(
        GeofenceRejection(
          location: DefinitionLocation(file: file, position: .line(Int(part.positions[d.row]))),
          id: d.id,
          reason: .duplicateID(firstDefinedAt: location(at: Int(d.first)))))
    }
    rejected += partRejected.sortedByPosition()
    assert(count == base + part.positions.count - duplicates.count)
  }
}

extension GeofenceColumns {
  /// A row of a part appended by ``append(deferredPart:)`` whose id an earlier row holds.
  struct DuplicateRow {
    /// The row in the part.
    var row: Int
    var id: String
    /// The row (in these columns, after the append) that holds the id.
    var first: Int32
  }

  /// Appends the rows of `part` (read with ``IDCheck/deferred``) but those whose id an
  /// earlier row holds, looking each id up in ``lookup`` in row order; `part` is emptied, each
  /// of its columns released once copied.
  /// - Returns: the rows left out, in row order.
  /// - Complexity: O(n) expected in `part`'s rows and detail bytes.
  mutating func append(deferredPart part: inout GeofenceColumns) -> [DuplicateRow] {
    let base = Int32(ids.count)
    var duplicates: [DuplicateRow] = []
    ids.reserveCapacity(ids.count + part.ids.count)
    let partIDs = part.ids
    part.ids = []
    lookup.findOrAppend(contentsOf: partIDs, to: &ids) { row, first in
      duplicates.append(DuplicateRow(row: row, id: partIDs[row], first: first))
    }
    if duplicates.isEmpty {
      circles.append(contentsOf: part.circles)
      part.circles = []
      polygons.append(contentsOf: part.polygons)
      polygonRows.append(contentsOf: part.polygonRows.lazy.map { $0 + base })
      part.polygons = []
      part.polygonRows = []
      if !part.detailOfRow.isEmpty {
        if detailOfRow.count < Int(base) {
          detailOfRow.append(contentsOf: repeatElement(-1, count: Int(base) - detailOfRow.count))
        }
        let spanBase = Int32(detailSpans.count)
        let textBase = detailText.count
        detailOfRow.append(contentsOf: part.detailOfRow.lazy.map { $0 < 0 ? -1 : $0 + spanBase })
        part.detailOfRow = []
        detailSpans.append(
          contentsOf: part.detailSpans.lazy.map {
            DetailSpan(
              start: $0.start + textBase, nameCount: $0.nameCount, metadataCount: $0.metadataCount)
          })
        part.detailSpans = []
        detailText.append(contentsOf: part.detailText)
        part.detailText = []
      }
      return duplicates
    }
    // Rare: row by row, leaving the duplicates out.
    var next = 0
    var polygon = 0
    for row in 0..<part.circles.count {
      if next < duplicates.count && duplicates[next].row == row {
        next += 1
        continue
      }
      let at = Int32(circles.count)
      circles.append(part.circles[row])
      while polygon < part.polygonRows.count && part.polygonRows[polygon] < Int32(row) {
        polygon += 1
      }
      if polygon < part.polygonRows.count && part.polygonRows[polygon] == Int32(row) {
        polygons.append(part.polygons[polygon])
        polygonRows.append(at)
      }
      if row < part.detailOfRow.count, part.detailOfRow[row] >= 0 {
        let span = part.detailSpans[Int(part.detailOfRow[row])]
        let length = Int(max(span.nameCount, 0) + max(span.metadataCount, 0))
        let start = detailText.count
        detailText.append(contentsOf: part.detailText[span.start..<(span.start + length)])
        addDetails(
          DetailSpan(start: start, nameCount: span.nameCount, metadataCount: span.metadataCount),
          row: at)
      }
    }
    part = GeofenceColumns()
    return duplicates
  }
}
