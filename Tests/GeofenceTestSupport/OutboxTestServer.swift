import Foundation

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif
#if canImport(Glibc)
  import Glibc
#endif

/// The reference server (`tools/server/run`) on a free loopback port with a temporary
/// database and the admin routes, for upload integration tests. Started in `init`, stopped by
/// ``stop()`` or `deinit`.
public final class OutboxTestServer: @unchecked Sendable {
  /// Whether the server can run here (`python3` with its requirements importable).
  public static let isAvailable: Bool = {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    p.arguments = ["python3", "-c", "import fastapi, uvicorn"]
    p.standardOutput = FileHandle.nullDevice
    p.standardError = FileHandle.nullDevice
    do { try p.run() } catch { return false }
    p.waitUntilExit()
    return p.terminationStatus == 0
  }()

  public let port: Int
  /// `http://127.0.0.1:PORT`.
  public let url: URL
  public let directory: URL
  private let process: Process

  /// Starts the server with accounts `keys` and waits until `/healthz` answers.
  /// - Parameter extraArguments: more options, e.g. `["--max-batch-events", "10"]`.
  public init(keys: [String], extraArguments: [String] = []) throws {
    directory = FileManager.default.temporaryDirectory.appendingPathComponent(
      "outbox-server-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    port = try ReferenceServer.freePort()
    url = Self.baseURL(port: port)
    process = Process()
    process.executableURL = TestPaths.packageRoot.appendingPathComponent("tools/server/run")
    process.arguments =
      [
        "--port", String(port), "--db", directory.appendingPathComponent("server.sqlite").path,
        "--enable-admin",
      ] + keys.flatMap { ["--key", $0] } + extraArguments
    process.standardOutput = FileHandle.nullDevice
    process.standardError = try FileHandle(
      forWritingTo: {
        let log = directory.appendingPathComponent("server.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        return log
      }())
    try process.run()
    let deadline = Date().addingTimeInterval(20)
    while Date() < deadline {
      if let (status, _) = try? request("GET", "/healthz"), status == 200 { return }
      if !process.isRunning { break }
      Thread.sleep(forTimeInterval: 0.05)
    }
    stop()
    throw ServerError(message: "the reference server did not start on port \(port)")
  }

  deinit { stop() }

  /// Stops the server: SIGTERM, and SIGKILL when it has not exited 1 s later (uvicorn waits
  /// for open keep-alive connections on SIGTERM).
  public func stop() {
    guard process.isRunning else { return }
    process.terminate()
    let deadline = Date().addingTimeInterval(1)
    while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
    if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    process.waitUntilExit()
  }

  public struct ServerError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
  }

  /// Arms a fault (`POST /admin/faults`), e.g. `["path": "/v1/events", "kind": "429",
  /// "retry_after": 2, "key": "k1"]`.
  public func armFault(_ spec: [String: Any]) throws {
    let (status, body) = try request(
      "POST", "/admin/faults", body: try JSONSerialization.data(withJSONObject: spec))
    guard status == 201 else {
      throw ServerError(
        message: "arming \(spec) failed: \(status) \(String(decoding: body, as: UTF8.self))")
    }
  }

  /// `GET /admin/events?key=KEY`: `event_count`, `delivery_count`, `events` (each with `id`,
  /// `count`, `attempts`, `event`) and `batches`.
  public func events(key: String) throws -> [String: Any] {
    let (status, body) = try request("GET", "/admin/events?key=\(key)")
    guard status == 200, let object = try JSONSerialization.jsonObject(with: body) as? [String: Any]
    else { throw ServerError(message: "admin events: \(status)") }
    return object
  }

  /// The ids stored for `key`, in arrival order.
  public func storedIDs(key: String) throws -> [String] {
    (try events(key: key)["events"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
  }

  /// One synchronous request to the server.
  public func request(_ method: String, _ path: String, body: Data? = nil, timeout: Double = 10)
    throws -> (Int, Data)
  {
    guard let target = URL(string: url.absoluteString + path) else {
      throw ServerError(message: "bad path \(path)")
    }
    var r = URLRequest(url: target, timeoutInterval: timeout)
    r.httpMethod = method
    r.httpBody = body
    if body != nil { r.setValue("application/json", forHTTPHeaderField: "Content-Type") }
    final class Box: @unchecked Sendable {
      var result: Result<(Int, Data), Error> = .failure(ServerError(message: "no answer"))
    }
    let box = Box()
    let done = DispatchSemaphore(value: 0)
    URLSession.shared.dataTask(with: r) { data, response, error in
      if let error {
        box.result = .failure(error)
      } else {
        box.result = .success(((response as? HTTPURLResponse)?.statusCode ?? 0, data ?? Data()))
      }
      done.signal()
    }.resume()
    done.wait()
    return try box.result.get()
  }

  static func baseURL(port: Int) -> URL {
    var components = URLComponents()
    components.scheme = "http"
    components.host = "127.0.0.1"
    components.port = port
    return components.url ?? URL(fileURLWithPath: "/")
  }
}
