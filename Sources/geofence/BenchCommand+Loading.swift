import DelimitedText
import Foundation
import GeofenceBenchmarks
import GeofenceDefinitions
import GeofenceEngine
import JSONText
import TrackFormats

extension BenchCommand {
  /// `--load` and `--load-tracks`: the geofence and track readers' throughput, each file read
  /// into memory first and then parsed (with validation) in timed passes; one line a file,
  /// and with `--json` an object `{"loading": [...]}`. For a geofence file it also gives the
  /// resident bytes a held load result adds per geofence, for the first file only (Linux
  /// `/proc/self/statm` around its first read; 0 where unknown), and the bytes a
  /// ``GeofenceEngine/GeofenceEngine`` holding that set adds once the load result is gone:
  /// resident, and by part (``GeofenceEngine/GeofenceEngine/memoryFootprint``).
  ///
  /// - Throws: ``WorkloadFileError/cannotOpen(path:reason:)`` for a file that cannot be read,
  ///   ``WorkloadFileError/malformed(path:line:message:)`` for one its reader refuses whole.
  static func measureLoading(_ s: Settings) throws -> Int32 {
    var results: [(kind: String, result: LoadingResult)] = []
    var residentPerGeofence: [String: Int] = [:]
    var engineMemory = ""
    let progress = BenchProgress.shared
    for path in s.loadPaths {
      let data = try fileData(path)
      let format = GeofenceFileFormat.detect(
        pathExtension: (path as NSString).pathExtension, data: data)
      // The resident set a held load result adds, per geofence: measured around the first
      // read of the first file only, before any pass has grown the heap (later files reuse
      // freed pages, which the resident set does not show).
      let residentBefore = SystemProbes.residentBytes()
      let held: GeofenceLoadResult
      do {
        held = try GeofenceFileReader.read(
          data: data, format: format, fileName: path, defaultRadiusMeters: s.loadRadiusMeters)
      } catch {
        throw WorkloadFileError.malformed(path: path, line: 0, message: error.description)
      }
      let residentAdded = SystemProbes.residentBytes() - residentBefore
      // The figures cover what the reader took: say when that is not the whole file.
      for cut in held.truncations {
        printError("warning: \(cut); the figures cover the part before it")
      }
      if let first = held.rejected.first {
        printError(
          "warning: \(path): \(held.rejected.count) definition(s) rejected, the first: \(first)")
      }
      let perGeofence = held.count == 0 ? 0 : residentAdded / held.count
      if results.isEmpty {
        residentPerGeofence[path] = perGeofence
        if held.count > 0 {
          engineMemory = try engineFootprint(
            consuming: consume held, file: path, residentBefore: residentBefore)
        }
      }
      progress.update("loading \(path)", phase: true)
      let r = LoadingBenchmark.run(
        file: path, bytes: data.count, repetitions: s.options.repetitions,
        minimumPassSeconds: s.options.minimumPassSeconds
      ) {
        let loaded = try? GeofenceFileReader.read(
          data: data, format: format, fileName: path, defaultRadiusMeters: s.loadRadiusMeters)
        return (loaded?.count ?? 0, loaded?.rejected.count ?? 0)
      }
      results.append(("geofences", r))
    }
    for path in s.trackPaths {
      let data = try fileData(path)
      let name = (path as NSString).lastPathComponent
      do {
        let track = try TrackReader.read(data: data, fileName: name)
        if let cut = track.truncation {
          printError("warning: \(cut); the figures cover the part before it")
        }
        if let first = track.skippedRows.first {
          printError(
            "warning: \(path): \(track.skippedRows.count) row(s) skipped, the first: \(first)")
        }
      } catch {
        throw WorkloadFileError.malformed(path: path, line: 0, message: error.description)
      }
      progress.update("reading track \(path)", phase: true)
      let r = LoadingBenchmark.run(
        file: path, bytes: data.count, repetitions: s.options.repetitions,
        minimumPassSeconds: s.options.minimumPassSeconds
      ) {
        let track = try? TrackReader.read(data: data, fileName: name)
        return (track?.fixes.count ?? 0, track?.skippedRows.count ?? 0)
      }
      results.append(("track", r))
    }
    progress.clear()
    var text = "loading (file in memory, parse and validation timed):\n"
    for (kind, r) in results {
      text += "  \(kind) \(r.line)"
      if kind == "geofences", let bytes = residentPerGeofence[r.file] {
        text += "; the load result holds \(bytes) B resident a geofence"
      }
      text += "\n"
    }
    text += engineMemory
    writeStandardOutput(Data(text.utf8))
    if let path = s.jsonPath {
      let rows = results.map { kind, r in
        var json = JSONObjectWriter(numberStyle: .integersWithoutFraction)
        json.add("kind", string: kind)
        json.add("file", string: r.file)
        json.add("bytes", integer: r.bytes)
        json.add("rows", integer: r.rows)
        json.add("rejected", integer: r.rejected)
        json.add("rounds", integer: r.rounds)
        json.add(
          "megabytes_per_second", number: JSONText.rounded(r.bytesPerSecond / 1e6, decimals: 3))
        json.add("rows_per_second", number: JSONText.rounded(r.rowsPerSecond, decimals: 1))
        if kind == "geofences" {
          json.add(
            "resident_bytes_per_geofence", number: residentPerGeofence[r.file].map(Double.init))
        }
        return json.finish()
      }
      try writeOutputFile("{\"loading\": [" + rows.joined(separator: ", ") + "]}\n", to: path)
    }
    return ExitStatus.ok
  }

  /// The bytes of `path`, or ``WorkloadFileError/cannotOpen(path:reason:)``.
  private static func fileData(_ path: String) throws -> Data {
    do {
      return try TextFile.read(atPath: path)
    } catch {
      throw WorkloadFileError.cannotOpen(path: path, reason: error.reason)
    }
  }

  /// Builds an engine from `load`'s geofences, lets the load result go and returns the lines
  /// that give the resident bytes the engine adds per geofence (against `residentBefore`, taken
  /// before the load) and its live set's bytes by part.
  static func engineFootprint(
    consuming load: consuming GeofenceLoadResult, file: String, residentBefore: Int
  ) throws -> String {
    let n = load.count
    let engine: GeofenceEngine
    do {
      engine = try GeofenceEngine(configuration: .init(checkpoints: .manual), loaded: load)
    } catch {
      throw WorkloadFileError.malformed(path: file, line: 0, message: "\(error)")
    }
    releaseFreedMemory()
    let resident = SystemProbes.residentBytes() - residentBefore
    let parts = engine.memoryFootprint
    let total = parts.reduce(0) { $0 + $1.bytes }
    func perGeofence(_ b: Int) -> String { String(format: "%.1f", Double(b) / Double(n)) }
    var text =
      "engine holding the first file's \(n) geofences, load result released: "
      + "\(perGeofence(resident)) B resident a geofence; live set \(perGeofence(total)) B:\n"
    for (part, bytes) in parts where bytes > 0 {
      text += "  \(perGeofence(bytes)) B  \(part)\n"
    }
    // The indexed snapshot of the same set: written once, then opened as an engine on a store
    // opens it (map, checksum, decode).
    let directory = NSTemporaryDirectory()
    do throws(EngineError) {
      let snapshot = try engine.measureSnapshot(in: directory, repetitions: 5)
      let sorted = snapshot.openSeconds.sorted()
      text +=
        "indexed snapshot: \(perGeofence(snapshot.bytes)) B a geofence on disk; opened in "
        + String(format: "%.1f", sorted[sorted.count / 2] * 1000)
        + " ms (median of \(sorted.count); map, checksum, decode)\n"
    } catch {
      text += "indexed snapshot: not measured (\(error))\n"
    }
    return text
  }
}
