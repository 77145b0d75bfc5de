import DelimitedText
import Foundation
import Testing
import GeofenceTestSupport

#if canImport(Glibc)
  import Glibc
#endif

@Test func aRegularFileIsReadWholeAtAnySize() throws {
  let dir = TestScratch.root.appendingPathComponent(
    "textfile-\(UUID().uuidString)")
  try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
  defer { try? FileManager.default.removeItem(at: dir) }
  // Sizes around the first read's size (64 KiB) and the bound on pipes, which a regular file
  // does not have.
  for size in [0, 1, 65_535, 65_536, 65_537, 300_001] {
    let bytes = (0..<size).map { UInt8(ascii: "a") + UInt8($0 % 26) }
    let url = dir.appendingPathComponent("f\(size).csv")
    try Data(bytes).write(to: url)
    #expect(try TextFile.read(atPath: url.path, maximumStreamBytes: 10) == Data(bytes))
  }
}

@Test func endlessOrBinaryDevicesAreRefusedWithoutFillingMemory() {
  #expect(
    throws: TextFile.ReadFailure(
      reason: "holds NUL bytes: binary data, not a text file", isContent: true)
  ) {
    try TextFile.read(atPath: "/dev/zero")
  }
  #expect(throws: TextFile.ReadFailure(reason: "is a directory, not a file")) {
    try TextFile.read(atPath: "/tmp")
  }
  #expect((try? TextFile.read(atPath: "/dev/null")) == Data())
  #expect(throws: TextFile.ReadFailure.self) { try TextFile.read(atPath: "/no/such/file") }
}

@Test func aPipeIsReadToItsEndWithinTheBound() throws {
  let dir = TestScratch.root.appendingPathComponent(
    "textfile-\(UUID().uuidString)")
  try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
  defer { try? FileManager.default.removeItem(at: dir) }
  func fifo(_ name: String, writing text: String) -> String {
    let path = dir.appendingPathComponent(name).path
    #expect(mkfifo(path, 0o600) == 0)
    // The writer opens the FIFO after the reader (open blocks until both ends are open).
    Thread.detachNewThread {
      let fd = open(path, O_WRONLY)
      guard fd >= 0 else { return }
      var bytes = Array(text.utf8)
      _ = write(fd, &bytes, bytes.count)
      close(fd)
    }
    return path
  }
  let text = String(repeating: "id,latitude,longitude\n", count: 10)
  #expect(
    try TextFile.read(atPath: fifo("a", writing: text), maximumStreamBytes: 1000)
      == Data(text.utf8))
  #expect(
    throws: TextFile.ReadFailure(
      reason: "longer than 100 bytes, the most read from a pipe or device", isContent: true)
  ) {
    try TextFile.read(atPath: fifo("b", writing: text), maximumStreamBytes: 100)
  }
}

/// A regular file is read at the size it had when opened: one that grows meanwhile is not
/// followed without end.
@Test func aFileIsReadAtTheSizeItHadWhenOpened() throws {
  let dir = TestScratch.root.appendingPathComponent(
    "textfile-\(UUID().uuidString)")
  try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
  defer { try? FileManager.default.removeItem(at: dir) }
  let path = dir.appendingPathComponent("growing.csv").path
  try Data("id,latitude,longitude\n".utf8).write(to: URL(fileURLWithPath: path))
  // A writer appends for a while; the read returns what was there when it opened the file
  // (at least the first line) and ends.
  let writer = Thread {
    guard let handle = FileHandle(forWritingAtPath: path) else { return }
    handle.seekToEndOfFile()
    for _ in 0..<2_000 { handle.write(Data(String(repeating: "a,1,2\n", count: 100).utf8)) }
    try? handle.close()
  }
  writer.start()
  let data = try TextFile.read(atPath: path)
  #expect(data.starts(with: Data("id,latitude,longitude\n".utf8)))
  #expect(data.count <= 22 + 2_000 * 600)
  // A file of unknown size (procfs reports 0) is read to its end.
  #expect(try TextFile.read(atPath: "/proc/self/status").isEmpty == false)
}
