/// A step from a value to one of its parts: an object member or an array element.
public enum JSONPathComponent: Hashable, Sendable, CustomStringConvertible {
  case key(String)
  case index(Int)

  public var description: String {
    switch self {
    case .key(let k): return k
    case .index(let i): return "[\(i)]"
    }
  }
}

/// Why JSON text cannot be read, and where: the 1-based line and column (in bytes) of the
/// offending byte in the whole document, and the path from the value being read to it.
public struct JSONReadError: Error, Hashable, Sendable, CustomStringConvertible {
  public var message: String
  /// 1-based line in the document (LF, CRLF and CR end lines).
  public var line: Int
  /// 1-based byte column in that line.
  public var column: Int
  /// Members and elements from the value that was read (a whole document, or one element of
  /// it) down to the bad value; empty when the problem is in that value itself.
  public var path: [JSONPathComponent]

  public init(message: String, line: Int, column: Int, path: [JSONPathComponent] = []) {
    self.message = message
    self.line = line
    self.column = column
    self.path = path
  }

  /// The path as `a.b[2].c`, at most 6 components (`…` marks the ones left out).
  public var pathText: String {
    var out = ""
    for (k, component) in path.prefix(6).enumerated() {
      if case .key = component, k > 0 { out += "." }
      out += component.description
    }
    if path.count > 6 { out += "…" }
    return out
  }

  /// For example `radius: number 1e400 is out of range (beyond ±1.8e308) (line 3, column 14)`.
  public var description: String {
    let place = "(line \(line), column \(column))"
    return path.isEmpty ? "\(message) \(place)" : "\(pathText): \(message) \(place)"
  }
}
