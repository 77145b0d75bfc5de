import Foundation

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif
#if canImport(Glibc)
  import Glibc
#endif

/// The reference sync server (`tools/server/run`) in a child process on a free loopback port,
/// with a temporary database and the admin routes on, for integration tests.
///
/// Start it with ``start(keys:arguments:)``; it stops in ``stop()`` (or `deinit`), and its
/// temporary folder is removed. Tests that need it should carry
/// `.enabled(if: ReferenceServer.isAvailable)` so that they are skipped, not failed, on a
/// machine without `python3` or the server's packages (`tools/requirements.txt`).
public final class ReferenceServer: @unchecked Sendable {
  /// `http://127.0.0.1:PORT`.
  public let baseURL: URL
  public let port: Int
  /// The server's SQLite database.
  public let databasePath: String
  private let process: Process
  private let directory: URL
  private let lock = NSLock()
  private var stopped = false

  /// Why the server cannot run here, or nil when it can: `python3` must be on the `PATH` and
  /// import `fastapi` and `uvicorn`.
  public static let unavailableReason: String? = {
    let script = TestPaths.packageRoot.appendingPathComponent("tools/server/run").path
    guard FileManager.default.isExecutableFile(atPath: script) else { return "no \(script)" }
    let probe = Process()
    probe.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    probe.arguments = ["python3", "-c", "import fastapi, uvicorn"]
    probe.standardOutput = FileHandle.nullDevice
    probe.standardError = FileHandle.nullDevice
    do {
      try probe.run()
      probe.waitUntilExit()
    } catch {
      return "python3 not found: \(error)"
    }
    return probe.terminationStatus == 0
      ? nil : "python3 cannot import fastapi and uvicorn (pip install -r tools/requirements.txt)"
  }()

  /// Whether the server can run here (see ``unavailableReason``).
  public static var isAvailable: Bool { unavailableReason == nil }

  private init(port: Int, process: Process, directory: URL, databasePath: String) {
    self.port = port
    self.process = process
    self.directory = directory
    self.databasePath = databasePath
    self.baseURL = URL(string: "http://127.0.0.1:\(port)")!
  }

  deinit { stop() }

  /// Starts a server and waits until `GET /healthz` answers.
  /// - Parameters:
  ///   - keys: accounts to create at start (`--key`).
  ///   - arguments: further options of `tools/server/run` (e.g. `--history-depth 2`).
  /// - Throws: when the server does not come up within about 20 s (after three ports).
  public static func start(keys: [String] = [], arguments: [String] = []) async throws
    -> ReferenceServer
  {
    var lastError = "not started"
    for _ in 0..<3 {
      let port = try freePort()
      let directory = TestScratch.root
        .appendingPathComponent("reference-server-\(UUID().uuidString)")
      try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
      let db = directory.appendingPathComponent("server.sqlite").path
      let process = Process()
      process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
      process.arguments =
        [
          "python3", TestPaths.packageRoot.appendingPathComponent("tools/server/run").path,
          "--port", "\(port)", "--db", db, "--enable-admin",
        ]
        + keys.flatMap { ["--key", $0] } + arguments
      process.currentDirectoryURL = TestPaths.packageRoot
      let log = directory.appendingPathComponent("server.log")
      _ = FileManager.default.createFile(atPath: log.path, contents: nil)
      let handle = try FileHandle(forWritingTo: log)
      process.standardOutput = handle
      process.standardError = handle
      try process.run()
      let server = ReferenceServer(
        port: port, process: process, directory: directory, databasePath: db)
      for _ in 0..<200 {
        if !process.isRunning { break }
        if let (status, _) = try? await server.request("GET", "/healthz"), status == 200 {
          return server
        }
        try await Task.sleep(nanoseconds: 100_000_000)
      }
      lastError = (try? String(contentsOf: log, encoding: .utf8)) ?? "no log"
      server.stop()
    }
    throw ReferenceServerError(message: "reference server did not start: \(lastError)")
  }

  /// Stops the server (SIGTERM; SIGKILL after 2 s) and removes its temporary folder. Idempotent.
  public func stop() {
    let first = lock.withLock { () -> Bool in
      defer { stopped = true }
      return !stopped
    }
    guard first else { return }
    // SIGTERM, then SIGKILL if uvicorn is still draining connections after 2 s.
    if process.isRunning {
      process.terminate()
      var waited = 0
      while process.isRunning && waited < 200 {
        usleep(10_000)
        waited += 1
      }
      if process.isRunning {
        kill(process.processIdentifier, SIGKILL)
        while process.isRunning { usleep(10_000) }
      }
    }
    try? FileManager.default.removeItem(at: directory)
  }

  /// Sends a request to the server and returns the status and body.
  /// - Parameters:
  ///   - json: a JSON-serialisable body (sent as `application/json`), or nil.
  ///   - key: sent as `Authorization: Bearer KEY` when given.
  public func request(
    _ method: String, _ path: String, json: Any? = nil, key: String? = nil
  ) async throws -> (Int, Data) {
    var urlRequest = URLRequest(url: URL(string: baseURL.absoluteString + path)!)
    urlRequest.httpMethod = method
    urlRequest.timeoutInterval = 10
    if let json {
      urlRequest.httpBody = try JSONSerialization.data(withJSONObject: json)
      urlRequest.setValue("application/json", forHTTPHeaderField: "Content-Type")
    }
    if let key { urlRequest.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization") }
    let session = Self.session
    let request = urlRequest
    return try await withCheckedThrowingContinuation { continuation in
      session.dataTask(with: request) { data, response, error in
        if let error {
          continuation.resume(throwing: error)
        } else {
          continuation.resume(
            returning: ((response as? HTTPURLResponse)?.statusCode ?? 0, data ?? Data()))
        }
      }.resume()
    }
  }

  private static let session: URLSession = {
    let configuration = URLSessionConfiguration.ephemeral
    configuration.urlCache = nil
    return URLSession(configuration: configuration)
  }()

  /// A geofence as the admin routes take it.
  public static func geofence(
    _ id: String, latitude: Double, longitude: Double, radius: Double, name: String? = nil
  ) -> [String: Any] {
    var g: [String: Any] = [
      "id": id, "latitude": latitude, "longitude": longitude, "radius": radius,
    ]
    if let name { g["name"] = name }
    return g
  }

  /// `PUT /admin/accounts/{key}/geofences`: replaces the account's set.
  public func replaceGeofences(key: String, _ geofences: [[String: Any]]) async throws {
    try await admin("PUT", "/admin/accounts/\(key)/geofences", ["geofences": geofences])
  }

  /// `PATCH /admin/accounts/{key}/geofences`: upserts and deletes in one version.
  public func patchGeofences(key: String, upsert: [[String: Any]] = [], delete: [String] = [])
    async throws
  {
    try await admin(
      "PATCH", "/admin/accounts/\(key)/geofences", ["upsert": upsert, "delete": delete])
  }

  /// `POST /admin/faults`, e.g. `["path": "/v1/geofences", "kind": "500", "count": 10]`.
  public func armFault(_ spec: [String: Any]) async throws {
    try await admin("POST", "/admin/faults", spec)
  }

  /// `DELETE /admin/faults`.
  public func clearFaults() async throws {
    try await admin("DELETE", "/admin/faults", nil)
  }

  /// `GET /admin/events?key=KEY`: what the ingest side stored for the account: `event_count`,
  /// `delivery_count`, `events` (each with `id`, `count`, `attempts`, `event`) and `batches`.
  public func events(key: String) async throws -> [String: Any] {
    let (status, body) = try await request("GET", "/admin/events?key=\(key)")
    guard status == 200, let object = try JSONSerialization.jsonObject(with: body) as? [String: Any]
    else { throw ReferenceServerError(message: "GET /admin/events: \(status)") }
    return object
  }

  private func admin(_ method: String, _ path: String, _ json: Any?) async throws {
    let (status, body) = try await request(method, path, json: json)
    guard (200..<300).contains(status) else {
      throw ReferenceServerError(
        message: "\(method) \(path): \(status) \(String(decoding: body, as: UTF8.self))")
    }
  }

  /// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0, then released).
  static func freePort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw ReferenceServerError(message: "socket() failed") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    guard bound == 0 else { throw ReferenceServerError(message: "bind() failed") }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let named = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    guard named == 0 else { throw ReferenceServerError(message: "getsockname() failed") }
    return Int(UInt16(bigEndian: address.sin_port))
  }
}

/// A reference server that could not be started or refused an admin request.
public struct ReferenceServerError: Error, CustomStringConvertible {
  public var message: String
  public var description: String { message }
}
