import Foundation

/// Runs the built `geofence` executable and captures its output, for end-to-end CLI tests.
public enum CommandRunner {
  public struct Output: Sendable {
    public var status: Int32
    public var stdout: String
    public var stderr: String
  }

  /// The `geofence` executable: the one `GEOFENCE_BINARY` names when set (`tools/test` sets
  /// it to the release build, which runs the CLI tests several times faster than a debug
  /// build; nil when that file is not executable), else the one beside the test bundle
  /// (SwiftPM puts every product of a build in one folder), or in `.build/debug` of the
  /// package.
  public static var executable: URL? {
    var candidates: [URL] = []
    if let named = ProcessInfo.processInfo.environment["GEOFENCE_BINARY"], !named.isEmpty {
      let url = URL(fileURLWithPath: named)
      return FileManager.default.isExecutableFile(atPath: url.path) ? url : nil
    }
    if let first = CommandLine.arguments.first {
      var dir = URL(fileURLWithPath: first).deletingLastPathComponent()
      for _ in 0..<3 {
        candidates.append(dir.appendingPathComponent("geofence"))
        dir.deleteLastPathComponent()
      }
    }
    candidates.append(TestPaths.packageRoot.appendingPathComponent(".build/debug/geofence"))
    return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) }
  }

  /// Runs `geofence` with `arguments` in `directory` (default the package root), with
  /// `input` as its standard input (nothing when nil), and waits for it.
  /// - Parameter environment: variables set (or replaced) in the child's environment, which
  ///   is otherwise this process's. Default none.
  /// - Throws: when the executable is missing or cannot be started.
  public static func run(
    _ arguments: [String], in directory: URL = TestPaths.packageRoot, input: Data? = nil,
    environment: [String: String] = [:]
  ) throws -> Output {
    guard let executable else {
      throw CocoaError(.fileNoSuchFile, userInfo: [NSLocalizedDescriptionKey: "geofence not built"])
    }
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    process.currentDirectoryURL = directory
    if !environment.isEmpty {
      process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    }
    let out = Pipe()
    let err = Pipe()
    let inPipe = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = input == nil ? FileHandle.nullDevice : inPipe
    try process.run()
    // Read both pipes to the end (and write the input) before waiting, so that a large output
    // cannot block the child.
    let group = DispatchGroup()
    nonisolated(unsafe) var errData = Data()
    group.enter()
    DispatchQueue.global().async {
      errData = err.fileHandleForReading.readDataToEndOfFile()
      group.leave()
    }
    if let input {
      group.enter()
      DispatchQueue.global().async {
        try? inPipe.fileHandleForWriting.write(contentsOf: input)
        try? inPipe.fileHandleForWriting.close()
        group.leave()
      }
    }
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    group.wait()
    process.waitUntilExit()
    return Output(
      status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
      stderr: String(decoding: errData, as: UTF8.self))
  }
}
