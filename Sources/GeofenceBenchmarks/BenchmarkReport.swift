#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Renders benchmark results for people (a text table), machines (JSON) and the README (an SVG
/// chart of throughput and memory per region against N).
public struct BenchmarkReport: Sendable {
  /// Settings the results were measured with.
  public struct Settings: Sendable {
    public var seed: UInt64
    /// Fixes per generated workload; `nil` when the workloads were read from files (each
    /// result gives its own count).
    public var fixCount: Int?
    public var threads: Int
    public var repetitions: Int
    public var cellSizeDegrees: Double?
    /// ``BenchmarkOptions/minimumPassSeconds``.
    public var minimumPassSeconds: Double
    public init(
      seed: UInt64, fixCount: Int?, threads: Int, repetitions: Int, cellSizeDegrees: Double?,
      minimumPassSeconds: Double = BenchmarkOptions().minimumPassSeconds
    ) {
      self.seed = seed
      self.fixCount = fixCount
      self.threads = threads
      self.repetitions = repetitions
      self.cellSizeDegrees = cellSizeDegrees
      self.minimumPassSeconds = minimumPassSeconds
    }
  }

  public var settings: Settings
  public var results: [BenchmarkResult]

  public init(settings: Settings, results: [BenchmarkResult]) {
    self.settings = settings
    self.results = results
  }

  // MARK: Table

  /// A fixed-width table, one row per result, then the checksums.
  public func table() -> String {
    let t = settings.threads
    let header = [
      "workload", "N", "fixes", "build s", "B/region", "fixes/s 1T", "fixes/s \(t)T", "x\(t)",
      "p50 ns", "p99 ns", "pairs/fix", "detector 1T", "detector \(t)T",
    ]
    var rows: [[String]] = []
    for r in results {
      let pairsPerFix =
        r.fixesMeasured == 0 ? 0 : Double(r.checksum.pairs) / Double(r.fixesMeasured)
      rows.append([
        r.workload, grouped(r.regionCount),
        grouped(r.fixesMeasured) + (r.complete ? "" : "*"),
        fixed(r.buildSeconds, 3), fixed(r.bytesPerRegion, 1), rate(r.singleThreadFixesPerSecond),
        rate(r.multiThreadFixesPerSecond),
        fixed(r.multiThreadFixesPerSecond / max(1e-9, r.singleThreadFixesPerSecond), 2),
        fixed(r.latencyP50Nanoseconds, 0), fixed(r.latencyP99Nanoseconds, 0),
        fixed(pairsPerFix, 2),
        r.detectorMeasured ? rate(r.detectorSingleThreadFixesPerSecond) : "-",
        r.detectorMeasured ? rate(r.detectorMultiThreadFixesPerSecond) : "-",
      ])
    }
    var text = layout(header: header, rows: rows, leftColumns: 1)
    if results.contains(where: { !$0.complete }) {
      text += "* time budget reached: only the first tracks were measured\n"
    }
    text += "\nchecksums (pairs, sum of slots mod 2^64, sum of fix index x slot mod 2^64);"
    text += " detector events (enter/exit/dwell, dropped fixes)\n"
    var sums: [[String]] = []
    for r in results {
      let d = r.detectorCounts
      sums.append([
        r.workload, String(r.regionCount), String(r.checksum.pairs), String(r.checksum.slotSum),
        String(r.checksum.weightedSum),
        r.detectorMeasured ? "\(d.enters)/\(d.exits)/\(d.dwells) dropped \(d.droppedFixes)" : "-",
      ])
    }
    text += layout(
      header: ["workload", "N", "pairs", "slot sum", "weighted sum", "detector"], rows: sums,
      leftColumns: 1)
    text += "\nindex shape (finest cell edge, levels probed per query, entries per region, cells,"
    text += " regions checked on every query)\n"
    var shapes: [[String]] = []
    for r in results {
      let s = r.indexShape
      shapes.append([
        r.workload, String(r.regionCount), fixed(s.finestCellSizeDegrees, 6) + "°",
        String(s.levels.count), fixed(s.entriesPerRegion, 2), String(s.cellCount),
        String(s.everywhereCount),
      ])
    }
    text += layout(
      header: ["workload", "N", "finest cell", "levels", "entries/region", "cells", "everywhere"],
      rows: shapes, leftColumns: 1)
    return text
  }

  func layout(header: [String], rows: [[String]], leftColumns: Int) -> String {
    var widths = header.map(\.count)
    for row in rows { for (i, c) in row.enumerated() { widths[i] = max(widths[i], c.count) } }
    func line(_ cells: [String]) -> String {
      var parts: [String] = []
      for (i, c) in cells.enumerated() {
        let pad = String(repeating: " ", count: widths[i] - c.count)
        parts.append(i < leftColumns ? c + pad : pad + c)
      }
      return parts.joined(separator: "  ")
    }
    var out = line(header) + "\n"
    out += widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ") + "\n"
    for row in rows { out += line(row) + "\n" }
    return out
  }

  // MARK: JSON

  /// A JSON document: `settings`, then `results`, one object per workload and size. Checksum
  /// fields are unsigned 64-bit integers written as JSON numbers. The `detector_` fields are
  /// `null` when the detector path was not measured (`--no-detector`).
  public func json() -> String {
    var out = "{\n"
    out += "  \"tool\": \"geofence bench\",\n"
    out += "  \"settings\": {\"seed\": \(settings.seed), "
    out += "\"fixes\": \(settings.fixCount.map(String.init) ?? "null"), "
    out += "\"threads\": \(settings.threads), \"repetitions\": \(settings.repetitions), "
    out += "\"min_pass_seconds\": \(jsonNumber(settings.minimumPassSeconds)), "
    out += "\"cell_size_degrees\": \(settings.cellSizeDegrees.map { jsonNumber($0) } ?? "null"), "
    out += "\"processors\": \(SystemProbes.processorCount())},\n"
    out += "  \"results\": [\n"
    for (i, r) in results.enumerated() {
      let d = r.detectorCounts
      /// A detector figure, or `null` when the detector was not measured.
      func detector(_ text: String) -> String { r.detectorMeasured ? text : "null" }
      let fields: [(String, String)] = [
        ("workload", "\"\(r.workload)\""), ("kind", "\"\(r.kind.rawValue)\""),
        ("regions", String(r.regionCount)), ("fixes", String(r.fixCount)),
        ("fixes_measured", String(r.fixesMeasured)), ("tracks_measured", String(r.tracksMeasured)),
        ("complete", r.complete ? "true" : "false"),
        ("build_seconds", jsonNumber(r.buildSeconds)),
        ("index_bytes", String(r.indexBytes)),
        ("bytes_per_region", jsonNumber(r.bytesPerRegion)),
        ("resident_bytes_delta", String(r.residentBytesDelta)),
        ("finest_cell_degrees", jsonNumber(r.indexShape.finestCellSizeDegrees)),
        ("levels", "[" + r.indexShape.levels.map(String.init).joined(separator: ", ") + "]"),
        ("cells", String(r.indexShape.cellCount)),
        ("entries_per_region", jsonNumber(r.indexShape.entriesPerRegion)),
        ("everywhere", String(r.indexShape.everywhereCount)),
        ("fixes_per_second_1_thread", jsonNumber(r.singleThreadFixesPerSecond)),
        ("fixes_per_second_all_threads", jsonNumber(r.multiThreadFixesPerSecond)),
        ("threads", String(r.threads)),
        ("query_rounds", String(r.queryRounds)),
        ("query_rounds_all_threads", String(r.multiThreadQueryRounds)),
        ("detector_rounds", detector(String(r.detectorRounds))),
        ("detector_rounds_all_threads", detector(String(r.multiThreadDetectorRounds))),
        ("latency_p50_ns", jsonNumber(r.latencyP50Nanoseconds)),
        ("latency_p99_ns", jsonNumber(r.latencyP99Nanoseconds)),
        ("pairs", String(r.checksum.pairs)), ("slot_sum", String(r.checksum.slotSum)),
        ("weighted_sum", String(r.checksum.weightedSum)),
        (
          "detector_fixes_per_second_1_thread",
          detector(jsonNumber(r.detectorSingleThreadFixesPerSecond))
        ),
        (
          "detector_fixes_per_second_all_threads",
          detector(jsonNumber(r.detectorMultiThreadFixesPerSecond))
        ),
        ("detector_enters", detector(String(d.enters))),
        ("detector_exits", detector(String(d.exits))),
        ("detector_dwells", detector(String(d.dwells))),
        ("detector_dropped_fixes", detector(String(d.droppedFixes))),
      ]
      out += "    {" + fields.map { "\"\($0.0)\": \($0.1)" }.joined(separator: ", ") + "}"
      out += i + 1 < results.count ? ",\n" : "\n"
    }
    out += "  ]\n}\n"
    return out
  }

  func jsonNumber(_ v: Double) -> String { v.isFinite ? "\(v)" : "null" }

  // MARK: SVG

  /// A plain SVG chart with two panels against N (log scale): query throughput in fixes/s (log
  /// scale; solid one thread, dashed all threads) and bytes per region. One colour per workload.
  /// Results with no regions are left out (a log scale has no place for N = 0).
  public func svg() -> String {
    let width = 980.0
    let height = 440.0
    let panelWidth = 380.0
    let panelHeight = 300.0
    let top = 50.0
    let lefts = [80.0, 560.0]
    let palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2"]
    // Only sizes a log scale can place.
    let results = self.results.filter { $0.regionCount > 0 }
    var names: [String] = []
    for r in results where !names.contains(r.workload) { names.append(r.workload) }
    let ns = results.map { Double($0.regionCount) }
    let rates = results.flatMap { [$0.singleThreadFixesPerSecond, $0.multiThreadFixesPerSecond] }
      .filter { $0 > 0 }
    let bytes = results.map(\.bytesPerRegion)
    guard !results.isEmpty, let nMin = ns.min(), let nMax = ns.max() else {
      return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"10\"/>\n"
    }
    let xLow = floor(log10(nMin)) - (nMin == nMax ? 0.5 : 0)
    let xHigh = ceil(log10(nMax)) + (nMin == nMax ? 0.5 : 0)
    let yLow = floor(log10(rates.min() ?? 1))
    let yHigh = max(yLow + 1, ceil(log10(rates.max() ?? 10)))
    let bytesHigh = max(64, ceil(((bytes.max() ?? 64) * 1.1) / 16) * 16)

    func x(_ n: Double, _ panel: Int) -> Double {
      lefts[panel] + (log10(n) - xLow) / (xHigh - xLow) * panelWidth
    }
    func yRate(_ v: Double) -> Double {
      top + panelHeight - (log10(v) - yLow) / (yHigh - yLow) * panelHeight
    }
    func yBytes(_ v: Double) -> Double { top + panelHeight - v / bytesHigh * panelHeight }
    func f(_ v: Double) -> String { fixed(v, 1) }

    var s = """
      <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" \
      viewBox="0 0 \(Int(width)) \(Int(height))" font-family="sans-serif" font-size="12">
      <rect width="100%" height="100%" fill="white"/>
      <text x="\(f(lefts[0]))" y="28" font-size="15">Query throughput (fixes/s; solid 1 thread, \
      dashed \(settings.threads) threads)</text>
      <text x="\(f(lefts[1]))" y="28" font-size="15">Index + geometry bytes per region</text>

      """
    // Axes and grid.
    for panel in 0..<2 {
      let l = lefts[panel]
      s +=
        "<rect x=\"\(f(l))\" y=\"\(f(top))\" width=\"\(f(panelWidth))\" height=\"\(f(panelHeight))\" fill=\"none\" stroke=\"#444\"/>\n"
      var e = xLow
      while e <= xHigh + 1e-9 {
        let n = pow(10, e)
        let px = x(n, panel)
        s +=
          "<line x1=\"\(f(px))\" y1=\"\(f(top))\" x2=\"\(f(px))\" y2=\"\(f(top + panelHeight))\" stroke=\"#ddd\"/>\n"
        s +=
          "<text x=\"\(f(px))\" y=\"\(f(top + panelHeight + 16))\" text-anchor=\"middle\">\(shortCount(n))</text>\n"
        e += 1
      }
      s +=
        "<text x=\"\(f(l + panelWidth / 2))\" y=\"\(f(top + panelHeight + 34))\" text-anchor=\"middle\">regions (N)</text>\n"
    }
    var e = yLow
    while e <= yHigh + 1e-9 {
      let v = pow(10, e)
      s +=
        "<line x1=\"\(f(lefts[0]))\" y1=\"\(f(yRate(v)))\" x2=\"\(f(lefts[0] + panelWidth))\" y2=\"\(f(yRate(v)))\" stroke=\"#ddd\"/>\n"
      s +=
        "<text x=\"\(f(lefts[0] - 6))\" y=\"\(f(yRate(v) + 4))\" text-anchor=\"end\">\(shortCount(v))</text>\n"
      e += 1
    }
    var b = 0.0
    while b <= bytesHigh + 1e-9 {
      s +=
        "<line x1=\"\(f(lefts[1]))\" y1=\"\(f(yBytes(b)))\" x2=\"\(f(lefts[1] + panelWidth))\" y2=\"\(f(yBytes(b)))\" stroke=\"#ddd\"/>\n"
      s +=
        "<text x=\"\(f(lefts[1] - 6))\" y=\"\(f(yBytes(b) + 4))\" text-anchor=\"end\">\(Int(b))</text>\n"
      b += bytesHigh <= 128 ? 16 : (bytesHigh <= 512 ? 64 : 256)
    }
    // The 64-byte-per-region target.
    s +=
      "<line x1=\"\(f(lefts[1]))\" y1=\"\(f(yBytes(64)))\" x2=\"\(f(lefts[1] + panelWidth))\" y2=\"\(f(yBytes(64)))\" stroke=\"#555\" stroke-dasharray=\"3 3\"/>\n"
    s +=
      "<text x=\"\(f(lefts[1] + panelWidth - 4))\" y=\"\(f(yBytes(64) - 4))\" text-anchor=\"end\" fill=\"#555\">target 64 B</text>\n"
    // Series.
    for (i, name) in names.enumerated() {
      let colour = palette[i % palette.count]
      let series = results.filter { $0.workload == name }.sorted { $0.regionCount < $1.regionCount }
      func path(_ points: [(Double, Double)], dashed: Bool) -> String {
        guard !points.isEmpty else { return "" }
        var out = ""
        if points.count > 1 {
          let list = points.map { "\(f($0.0)),\(f($0.1))" }.joined(separator: " ")
          out +=
            "<polyline points=\"\(list)\" fill=\"none\" stroke=\"\(colour)\" stroke-width=\"2\"\(dashed ? " stroke-dasharray=\"6 4\"" : "")/>\n"
        }
        for p in points {
          out +=
            "<circle cx=\"\(f(p.0))\" cy=\"\(f(p.1))\" r=\"3.5\" fill=\"\(dashed ? "white" : colour)\" stroke=\"\(colour)\"/>\n"
        }
        return out
      }
      s += path(
        series.filter { $0.singleThreadFixesPerSecond > 0 }.map {
          (x(Double($0.regionCount), 0), yRate($0.singleThreadFixesPerSecond))
        }, dashed: false)
      s += path(
        series.filter { $0.multiThreadFixesPerSecond > 0 }.map {
          (x(Double($0.regionCount), 0), yRate($0.multiThreadFixesPerSecond))
        }, dashed: true)
      s += path(
        series.map { (x(Double($0.regionCount), 1), yBytes($0.bytesPerRegion)) }, dashed: false)
      // Legend.
      let lx = 80.0 + Double(i) * 125
      let ly = height - 22
      s +=
        "<rect x=\"\(f(lx))\" y=\"\(f(ly - 9))\" width=\"14\" height=\"10\" fill=\"\(colour)\"/>\n"
      s += "<text x=\"\(f(lx + 19))\" y=\"\(f(ly))\">\(name)</text>\n"
    }
    s += "</svg>\n"
    return s
  }

}

// MARK: Number formatting

/// `value` with `digits` decimals (no Foundation).
func fixed(_ value: Double, _ digits: Int) -> String {
  guard value.isFinite else { return "-" }
  var buffer = [CChar](repeating: 0, count: 64)
  _ = withVaList([value]) { vsnprintf(&buffer, 64, "%.\(digits)f", $0) }
  return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// An integer with thin groups: 1,000,000.
func grouped(_ n: Int) -> String {
  let digits = String(n.magnitude)
  var out = ""
  for (i, c) in digits.enumerated() {
    if i > 0 && (digits.count - i) % 3 == 0 { out += "," }
    out.append(c)
  }
  return (n < 0 ? "-" : "") + out
}

/// A rate with a k/M/G suffix and three significant figures.
func rate(_ v: Double) -> String {
  if v >= 1e9 { return fixed(v / 1e9, v >= 1e10 ? 1 : 2) + " G" }
  if v >= 1e6 { return fixed(v / 1e6, v >= 1e7 ? 1 : 2) + " M" }
  if v >= 1e3 { return fixed(v / 1e3, v >= 1e4 ? 1 : 2) + " k" }
  return fixed(v, 0)
}

/// 10, 100, 1k, 10k, 1M, ...
func shortCount(_ v: Double) -> String {
  if v >= 1e9 { return fixed(v / 1e9, 0) + "G" }
  if v >= 1e6 { return fixed(v / 1e6, 0) + "M" }
  if v >= 1e3 { return fixed(v / 1e3, 0) + "k" }
  return fixed(v, 0)
}
