extension JSONText {
  /// Writes JSON text through a pointer into memory its caller sized in advance: the same
  /// bytes as the `append` functions of ``JSONText``, without an array's uniqueness and
  /// capacity checks and a copy call for every piece (an event of the stream is about thirty
  /// pieces).
  ///
  /// The caller measures an upper bound first (``quotedBound(byteCount:)``,
  /// ``numberBound``) and hands over at least that many bytes. Writing past the end is a
  /// programming error, checked by `assert` in debug builds only.
  ///
  /// ```swift
  /// withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 64) { buffer in
  ///   var w = JSONText.Writer(buffer)
  ///   w.write("{\"d\":")
  ///   w.writeThousandths(12.3456)  // 12.346
  ///   w.write("}")
  ///   out.append(contentsOf: w.written)
  /// }
  /// ```
  public struct Writer {
    @usableFromInline let base: UnsafeMutablePointer<UInt8>
    @usableFromInline let capacity: Int
    @usableFromInline var filled = 0
    /// Bytes written so far, from the start of the buffer.
    public var count: Int { filled }

    /// The longest text a number can take in any of the writer's forms: Swift's shortest
    /// round-trip text is at most 24 bytes (`-2.2250738585072014e-308`), an `Int64` 20.
    public static let numberBound = 32

    /// An upper bound of the JSON string literal of `byteCount` UTF-8 bytes: each byte may
    /// become a six-byte `\u00XX`, plus the two quotes.
    @inlinable
    public static func quotedBound(byteCount: Int) -> Int { 6 &* byteCount &+ 2 }

    /// A writer from the start of `buffer`.
    /// - Precondition: `buffer` is not empty.
    public init(_ buffer: UnsafeMutableBufferPointer<UInt8>) {
      guard let start = buffer.baseAddress else { preconditionFailure("an empty buffer") }
      base = start
      capacity = buffer.count
    }

    /// The bytes written so far.
    public var written: UnsafeBufferPointer<UInt8> {
      UnsafeBufferPointer(start: base, count: count)
    }

    /// Writes the UTF-8 bytes of `literal` (text the caller has checked, as for
    /// ``JSONText/append(_:to:)``).
    @inlinable @inline(__always)
    public mutating func write(_ literal: StaticString) {
      let n = literal.utf8CodeUnitCount
      assert(count + n <= capacity, "JSONText.Writer: past the measured bound")
      (base + count).update(from: literal.utf8Start, count: n)
      filled &+= n
    }

    /// Writes one byte.
    @inlinable @inline(__always)
    public mutating func write(byte: UInt8) {
      assert(count < capacity, "JSONText.Writer: past the measured bound")
      base[count] = byte
      filled &+= 1
    }

    /// Writes `bytes` verbatim (text that is already JSON).
    @inlinable @inline(__always)
    public mutating func write(bytes: UnsafeBufferPointer<UInt8>) {
      assert(count + bytes.count <= capacity, "JSONText.Writer: past the measured bound")
      if let start = bytes.baseAddress { (base + count).update(from: start, count: bytes.count) }
      filled &+= bytes.count
    }

    /// Hands `body` the next `n` bytes to fill, and counts them as written.
    @inlinable @inline(__always)
    public mutating func write(count n: Int, _ body: (UnsafeMutableBufferPointer<UInt8>) -> Void) {
      assert(count + n <= capacity, "JSONText.Writer: past the measured bound")
      body(UnsafeMutableBufferPointer(start: base + count, count: n))
      filled &+= n
    }

    /// Writes `bytes` (valid UTF-8) as a JSON string literal, the bytes of
    /// ``JSONText/appendQuoted(utf8:to:)``. Needs ``quotedBound(byteCount:)`` bytes.
    public mutating func writeQuoted(utf8 bytes: UnsafeBufferPointer<UInt8>) {
      assert(count + Self.quotedBound(byteCount: bytes.count) <= capacity)
      filled = JSONText.writeQuoted(
        utf8: bytes, into: UnsafeMutableBufferPointer(start: base, count: capacity), at: count)
    }

    /// Writes `s` as a JSON string literal (``JSONText/appendQuoted(_:to:)-([UInt8])``).
    public mutating func writeQuoted(_ s: String) {
      var s = s
      s.withUTF8 { writeQuoted(utf8: $0) }
    }

    /// Writes `x` as ``JSONText/appendNumber(_:style:to:)`` does: `null` when not finite.
    /// Needs ``numberBound`` bytes.
    public mutating func writeNumber(_ x: Double, style: NumberStyle) {
      guard x.isFinite else {
        write("null")
        return
      }
      if style == .integersWithoutFraction, x == x.rounded(), abs(x) < exactIntegerLimit {
        write(integer: Int64(x))
        return
      }
      var sink = PointerSink(base: base + count)
      x.write(to: &sink)
      assert(count + sink.count <= capacity, "JSONText.Writer: past the measured bound")
      filled &+= sink.count
    }

    /// Writes the decimal digits of `n`, `-` first when negative (``JSONText/appendInteger(_:to:)``).
    public mutating func write(integer n: Int64) {
      JSONText.withDecimalDigits(n) { digits in
        write(bytes: digits.assumingMemoryBound(to: UInt8.self))
      }
    }

    /// Writes `x` rounded to thousandths, the text of
    /// `writeNumber(JSONText.rounded(x, decimals: 3) + 0, style: .shortestRoundTrip)` (a
    /// negative zero as `0.0`), without the shortest round-trip search: below 10^12 in
    /// magnitude that text is the decimal `k / 1000` for `k = (x · 1000).rounded()`, with the
    /// fraction's trailing zeros dropped and at least one digit after the point. (`k` is
    /// exact, the division correctly rounded, and Doubles there are closer than 0.0005 apart,
    /// so that decimal is the shortest one that reads back as the rounded value; Swift writes
    /// such values without an exponent.) Larger values and non-finite ones take the general
    /// path. Needs ``numberBound`` bytes.
    public mutating func writeThousandths(_ x: Double) {
      let k = (x * 1000).rounded()
      guard abs(k) < 1e15 else {
        writeNumber(JSONText.rounded(x, decimals: 3) + 0, style: .shortestRoundTrip)
        return
      }
      var m = Int64(k)
      if m < 0 {
        write(byte: UInt8(ascii: "-"))
        m = -m
      }
      write(integer: m / 1000)
      write(byte: UInt8(ascii: "."))
      var fraction = m % 1000
      if fraction == 0 {
        write(byte: UInt8(ascii: "0"))
        return
      }
      var digits = 3
      while fraction % 10 == 0 {
        fraction /= 10
        digits -= 1
      }
      var divisor: Int64 = digits == 3 ? 100 : digits == 2 ? 10 : 1
      while divisor > 0 {
        write(byte: UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: fraction / divisor % 10))
        divisor /= 10
      }
    }

    /// Takes the ASCII text `Double.write(to:)` hands over, straight into the buffer.
    private struct PointerSink: TextOutputStream {
      let base: UnsafeMutablePointer<UInt8>
      var count = 0
      mutating func write(_ string: String) {
        for b in string.utf8 {
          base[count] = b
          count += 1
        }
      }
      mutating func _writeASCII(_ buffer: UnsafeBufferPointer<UInt8>) {
        if let start = buffer.baseAddress {
          (base + count).update(from: start, count: buffer.count)
        }
        count += buffer.count
      }
    }
  }
}
