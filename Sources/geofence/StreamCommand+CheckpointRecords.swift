import Foundation
import GeofenceEngine

/// `stream --state-in FILE|- --state-out FILE|-`: device checkpoints in and out as JSON Lines
/// records (``GeofenceEngine/GeofenceEngine/checkpointRecord(device:)``), for a caller that
/// keeps device state in a table of its own instead of `--state DIR` (a batch job per day,
/// partitioned by device).
extension StreamCommand {
  static let checkpointRecordHelp = """
      --state-in FILE         restore devices from checkpoint records before the input: JSON
                              Lines {"checkpoint": {...}, "device_id": "..."} as --state-out
                              writes them; a FILE with a line that is not a record is refused
                              (exit 65, nothing streamed: that device would start afresh).
                              '-': the records come on standard input (JSON Lines input
                              only), each before its device's first fix.
      --state-out FILE        after the input ends, write the record of every device seen
                              (restored or fed), sorted by device id. '-': to standard
                              output, after the events. Not with --state.
    """

  /// Where records come from and go to.
  struct CheckpointRecordOptions {
    /// A file, `-` for standard input, or nil.
    var input: String?
    /// A file, `-` for standard output, or nil.
    var output: String?

    /// Records come mixed with the fixes on standard input.
    var inputIsStandardInput: Bool { input == "-" }

    /// Why `--state-out FILE` cannot be written (``outputFileProblem(_:)``), or nil: checked
    /// before the stream starts, so that a long run's state is not lost at its end.
    var outputProblem: String? {
      guard let output, output != "-" else { return nil }
      return outputFileProblem(output).map { "--state-out \(output): \($0)" }
    }

    init(_ args: CommandLineArguments) throws(UsageError) {
      input = args.last("state-in")
      output = args.last("state-out")
      guard input != nil || output != nil else { return }
      if args.last("state") != nil {
        throw UsageError("--state-in and --state-out do not go with --state DIR")
      }
      if input == "-", let format = args.last("input-format"), format != "jsonl" {
        throw UsageError("--state-in - needs JSON Lines input (--input-format jsonl)")
      }
      if input == "-", args.positionals.contains(where: { $0 != "-" }) {
        throw UsageError("--state-in - reads standard input; give no input FILE")
      }
      // An output that cannot be created is checked before the stream (see
      // ``outputProblem``), and exits 73 as `replay --svg` does, not as a usage error.
    }
  }

  /// Restores every record of `path` (one per line; blank lines skipped).
  /// - Returns: ``ExitStatus/ok``, ``ExitStatus/noInput`` when the file cannot be read, or
  ///   ``ExitStatus/dataError`` when a line is not a record (every such line is reported; the
  ///   caller then streams nothing).
  static func restoreRecords(from path: String, into stream: inout Stream) -> Int32 {
    if let problem = inputProblem(path) {
      printError("geofence stream: --state-in \(path): \(problem)")
      return ExitStatus.noInput
    }
    guard let data = FileManager.default.contents(atPath: path) else {
      printError("geofence stream: --state-in \(path): cannot read")
      return ExitStatus.noInput
    }
    var status = ExitStatus.ok
    var number = 0
    for line in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
      number += 1
      if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
      do {
        try stream.engine.restoreDevice(fromCheckpointRecord: line)
        stream.counts.restoredDevices += 1
      } catch {
        status = ExitStatus.dataError
        printInputProblem("rejected: ", "\(path):\(number): \(error)")
      }
    }
    return status
  }

  /// Writes the record of every device in memory, sorted by id, to `path` (`-`: standard
  /// output, through the stream's output after its events).
  /// - Returns: ``ExitStatus/ok`` or ``ExitStatus/ioError``.
  static func writeRecords(of stream: inout Stream, to path: String) -> Int32 {
    var text: [UInt8] = []
    do {
      for device in stream.engine.deviceIDs {
        guard let record = try stream.engine.checkpointRecord(device: device) else { continue }
        text.append(contentsOf: record.utf8)
        text.append(10)
      }
    } catch {
      printError("geofence stream: --state-out: \(error)")
      return ExitStatus.ioError
    }
    if path == "-" {
      stream.output.append(contentsOf: text)
      return stream.flushOutput() ? ExitStatus.ok : ExitStatus.ioError
    }
    do {
      try writeOutputFile(Data(text), to: path)
    } catch {
      printError("geofence stream: --state-out \(path): \(error.localizedDescription)")
      return ExitStatus.ioError
    }
    return ExitStatus.ok
  }
}

extension StreamCommand.Stream {
  /// A line of standard input that is not a fix (`fixProblem` says why), tried as a
  /// checkpoint record (with `--state-in -`); a line that is neither is reported and skipped.
  mutating func restoreRecord(
    _ bytes: UnsafeBufferPointer<UInt8>, number: Int, name: String, fixProblem: String
  ) -> Int32 {
    do {
      try engine.restoreDevice(fromCheckpointRecord: bytes)
      counts.restoredDevices += 1
      return ExitStatus.ok
    } catch {
      return bad("\(name):\(number): not a fix (\(fixProblem)), and \(error); line skipped")
    }
  }
}
