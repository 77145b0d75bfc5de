import Foundation
import GeofenceTestSupport
import Testing

/// `geofence regions` lists what `geofence sync` stored, in three formats, with the values
/// the server was given.
@Suite(.waitsOnChildProcesses) struct RegionsCommandTests {
  @Test func withoutAStoreExits66AndABadFormatExits64() throws {
    let dir = try CLI.scratch("regions-usage")
    defer { try? FileManager.default.removeItem(at: dir) }
    let missing = try CLI.run(["regions", "--store", dir.appendingPathComponent("none").path])
    #expect(missing.status == 66, "\(missing.stderr)")
    let format = try CLI.run(["regions", "--store", dir.path, "--format", "xml"])
    #expect(format.status == 64, "\(format.stderr)")
    #expect(try CLI.run(["regions"]).status == 64)
  }

  @Test(.enabled(if: ReferenceServer.isAvailable, "python3 with fastapi and uvicorn"))
  func listsTheSyncedSetInEveryFormat() async throws {
    let server = try await ReferenceServer.start(keys: ["regions-key"])
    defer { server.stop() }
    try await server.replaceGeofences(key: "regions-key", CLI.equatorGeofences)
    let dir = try CLI.scratch("regions")
    defer { try? FileManager.default.removeItem(at: dir) }
    let store = dir.appendingPathComponent("store").path
    let sync = try CLI.run([
      "sync", "--server", server.baseURL.absoluteString, "--key", "regions-key", "--store", store,
    ])
    #expect(sync.status == 0, "\(sync.stderr)")

    let given = CLI.equatorGeofences.sorted {
      ($0["id"] as? String ?? "") < ($1["id"] as? String ?? "")
    }
    func checkRow(
      _ got: (id: String?, name: Any?, lat: Double?, lon: Double?, radius: Double?, metadata: Any?),
      _ g: [String: Any], _ format: String
    ) {
      let id = g["id"] as? String ?? ""
      #expect(got.id == id, "\(format)")
      #expect(CLI.same(got.name ?? NSNull(), g["name"] ?? NSNull()), "\(format) \(id) name")
      #expect(got.lat == (g["latitude"] as? NSNumber)?.doubleValue, "\(format) \(id)")
      #expect(got.lon == (g["longitude"] as? NSNumber)?.doubleValue, "\(format) \(id)")
      #expect(got.radius == (g["radius"] as? NSNumber)?.doubleValue, "\(format) \(id)")
      #expect(
        CLI.same(got.metadata ?? NSNull(), g["metadata"] ?? NSNull()), "\(format) \(id) metadata")
    }

    // CSV: id,name,latitude,longitude,radius_m,metadata,geometry (metadata as JSON text; no
    // polygon here, so the geometry is empty).
    let csv = try CLI.run(["regions", "--store", store])
    #expect(csv.status == 0, "\(csv.stderr)")
    #expect(
      csv.stderr.contains("geofences: 4") && csv.stderr.contains("stale: no"), "\(csv.stderr)")
    let csvLines = CLI.lines(csv.stdout)
    #expect(csvLines.first == "id,name,latitude,longitude,radius_m,metadata,geometry")
    #expect(csvLines.count == given.count + 1)
    for (line, g) in zip(csvLines.dropFirst(), given) {
      let fields = Self.csvFields(line)
      #expect(fields.count == 7 && fields[6].isEmpty, "\(line)")
      guard fields.count == 7 else { continue }
      let metadata =
        fields[5].isEmpty
        ? nil : try? JSONSerialization.jsonObject(with: Data(fields[5].utf8))
      checkRow(
        (
          fields[0], fields[1].isEmpty ? nil : fields[1], Double(fields[2]), Double(fields[3]),
          Double(fields[4]), metadata
        ), g, "csv")
    }

    // JSON Lines.
    let jsonl = try CLI.run(["regions", "--store", store, "--format", "jsonl"])
    #expect(jsonl.status == 0)
    let objects = CLI.objects(jsonl.stdout)
    #expect(objects.count == given.count)
    for (o, g) in zip(objects, given) {
      checkRow(
        (
          o["id"] as? String, o["name"] is NSNull ? nil : o["name"], o["latitude"] as? Double,
          o["longitude"] as? Double, o["radius"] as? Double,
          o["metadata"] is NSNull ? nil : o["metadata"]
        ),
        g, "jsonl")
    }

    // GeoJSON: Point features, [longitude, latitude], radius in metres.
    let geojson = try CLI.run(["regions", "--store", store, "--format", "geojson"])
    #expect(geojson.status == 0)
    let collection =
      try JSONSerialization.jsonObject(with: Data(geojson.stdout.utf8)) as? [String: Any]
    #expect(collection?["type"] as? String == "FeatureCollection")
    let features = collection?["features"] as? [[String: Any]] ?? []
    #expect(features.count == given.count)
    for (f, g) in zip(features, given) {
      let geometry = f["geometry"] as? [String: Any]
      let coordinates = geometry?["coordinates"] as? [Double] ?? []
      let properties = f["properties"] as? [String: Any] ?? [:]
      #expect(geometry?["type"] as? String == "Point" && coordinates.count == 2)
      checkRow(
        (
          f["id"] as? String, properties["name"] is NSNull ? nil : properties["name"],
          coordinates.last, coordinates.first, properties["radius"] as? Double,
          properties["metadata"] is NSNull ? nil : properties["metadata"]
        ), g, "geojson")
    }

    // Round trip: the JSON listing (the same objects as the JSON Lines, in an array) as a
    // --regions file gives the original's events.
    let json = try CLI.run(["regions", "--store", store, "--format", "json"])
    #expect(json.status == 0)
    let array =
      try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]] ?? []
    #expect(array.count == objects.count)
    let original = try CLI.writeEquatorGeofences(in: dir)
    let listed = dir.appendingPathComponent("listed.json")
    try json.stdout.write(to: listed, atomically: true, encoding: .utf8)
    let track = try CLI.writeEquatorTrack(in: dir)
    let fromOriginal = try CLI.run(["replay", "--quiet", "--regions", original, track])
    #expect(fromOriginal.status == 0 && CLI.lines(fromOriginal.stdout).count == 8)
    let fromListing = try CLI.run(["replay", "--quiet", "--regions", listed.path, track])
    #expect(fromListing.status == 0, "\(fromListing.stderr)")
    #expect(fromListing.stdout == fromOriginal.stdout)
  }

  /// Ids and names that a spreadsheet would take for a formula (`=`, `+`, `-`, `@`) are
  /// listed as they are in CSV, so the CSV listing reads back as the same set as the JSON one:
  /// the same events, ids included.
  @Test(.enabled(if: ReferenceServer.isAvailable, "python3 with fastapi and uvicorn"))
  func theCSVListingReadsBackFormulaLikeIdsAsTheyAre() async throws {
    let server = try await ReferenceServer.start(keys: ["formula-key"])
    defer { server.stop() }
    let prefixes = ["=", "-", "+", "@"]
    let geofences = CLI.equatorGeofences.enumerated().map { k, g -> [String: Any] in
      var g = g
      g["id"] = prefixes[k % prefixes.count] + (g["id"] as? String ?? "")
      g["name"] = "=SUM(1,2)"
      return g
    }
    try await server.replaceGeofences(key: "formula-key", geofences)
    let dir = try CLI.scratch("regions-formula")
    defer { try? FileManager.default.removeItem(at: dir) }
    let store = dir.appendingPathComponent("store").path
    let sync = try CLI.run([
      "sync", "--server", server.baseURL.absoluteString, "--key", "formula-key", "--store", store,
    ])
    #expect(sync.status == 0, "\(sync.stderr)")
    let track = try CLI.writeEquatorTrack(in: dir)
    var outputs: [String] = []
    for format in ["csv", "json"] {
      let listing = try CLI.run(["regions", "--store", store, "--format", format])
      #expect(listing.status == 0, "\(listing.stderr)")
      let file = dir.appendingPathComponent("listed.\(format)")
      try listing.stdout.write(to: file, atomically: true, encoding: .utf8)
      let replay = try CLI.run(["replay", "--quiet", "--regions", file.path, track])
      #expect(replay.status == 0, "\(replay.stderr)")
      outputs.append(replay.stdout)
    }
    #expect(CLI.lines(outputs[0]).count == 8)
    #expect(outputs[0] == outputs[1])
    #expect(outputs[0].contains(#""geofence_id":"="#))
    #expect(!outputs[0].contains(#""geofence_id":"'"#))
  }

  /// The fields of one RFC 4180 CSV line.
  static func csvFields(_ line: String) -> [String] {
    var fields: [String] = []
    var field = ""
    var quoted = false
    var chars = Array(line)[...]
    while let c = chars.popFirst() {
      if quoted {
        if c == "\"" {
          if chars.first == "\"" {
            field.append("\"")
            chars.removeFirst()
          } else {
            quoted = false
          }
        } else {
          field.append(c)
        }
      } else if c == "\"" {
        quoted = true
      } else if c == "," {
        fields.append(field)
        field = ""
      } else {
        field.append(c)
      }
    }
    fields.append(field)
    return fields
  }
}
