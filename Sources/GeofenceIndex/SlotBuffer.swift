/// A reusable list of region slots, filled by ``GridIndex/query(_:into:)-(_,SlotBuffer)``.
///
/// A query into a `SlotBuffer` writes each candidate's slot unconditionally and advances the
/// count only when the region contains the point, so a containing region costs a store and an
/// add: no branch on the answer, and no capacity or uniqueness check per element as
/// `Array.append` makes. Room is made once per run of candidates (a cell's entries).
///
/// It is a value: a copy keeps the contents it had when copied. Copies share storage until a
/// query that meets a candidate (a region to test) writes one of them, which first gives
/// itself storage of its own (copy-on-write, checked once per query). A query never allocates
/// once the buffer has room for the largest run of candidates it meets; `SlotBuffer()`
/// allocates nothing until a query first meets a candidate, even if it contains no point.
///
/// Elements are the slots of the last query, in the order the query found them (no particular
/// order), each exactly once. Indices are `0 ..< count`.
///
/// `@unchecked Sendable`: storage is written only by a query, after the uniqueness check, so
/// no copy (on any thread) ever sees its slots change.
public struct SlotBuffer: RandomAccessCollection, @unchecked Sendable {
  public typealias Index = Int
  public typealias Element = Int32

  /// Owns an allocation of `capacity` slots, freed in `deinit`.
  @usableFromInline
  internal final class Storage {
    @usableFromInline let base: UnsafeMutablePointer<Int32>
    @usableFromInline let capacity: Int

    @usableFromInline init(capacity: Int) {
      self.capacity = capacity
      self.base = UnsafeMutablePointer<Int32>.allocate(capacity: capacity)
    }

    deinit { base.deallocate() }
  }

  /// The allocation, or `nil` before the first query that meets a candidate.
  @usableFromInline internal var storage: Storage?
  /// `storage.base`, kept here so that a query reads it without going through the reference;
  /// `nil` with `storage`.
  @usableFromInline internal var base: UnsafeMutablePointer<Int32>?
  /// `storage.capacity`, or 0.
  @usableFromInline internal var capacity: Int
  /// The number of slots of the last answer.
  @usableFromInline internal var held: Int

  /// Number of slots held: the size of the last query's answer.
  @inlinable public var count: Int { held }

  /// An empty buffer. Allocates nothing: storage (at least 16 slots) comes with the first
  /// query that meets a candidate.
  @inlinable public init() {
    storage = nil
    base = nil
    capacity = 0
    held = 0
  }

  /// An empty buffer with room for at least `capacity` slots before it first grows.
  /// - Complexity: O(1); allocates `4 · max(capacity, 16)` bytes when `capacity > 0`.
  public init(capacity: Int) {
    self.init()
    if capacity > 0 { _replaceStorage(minimumCapacity: capacity) }
  }

  @inlinable public var startIndex: Int { 0 }
  @inlinable public var endIndex: Int { held }

  /// The slot at `position`.
  /// - Precondition: `0 <= position < count`.
  @inlinable
  public subscript(position: Int) -> Int32 {
    precondition(position >= 0 && position < held, "SlotBuffer index out of range")
    return base.unsafelyUnwrapped[position]
  }

  /// Removes every slot, keeping the capacity. O(1).
  @inlinable public mutating func removeAll() { held = 0 }

  /// Adds `slot` after the slots held, for a caller that merges a second answer into the
  /// first (the detector adds the polygons that contain a fix to the circle index's answer).
  /// - Complexity: amortised O(1); allocates only when the buffer grows or its storage is
  ///   shared with a copy.
  @inlinable
  public mutating func append(_ slot: Int32) {
    _prepare(held: held, extra: 1)
    base.unsafelyUnwrapped[held] = slot
    held &+= 1
  }

  /// Calls `body` with the slots held, as one buffer valid only during the call.
  @inlinable
  public func withUnsafeBufferPointer<R>(
    _ body: (UnsafeBufferPointer<Int32>) throws -> R
  ) rethrows -> R {
    try withExtendedLifetime(storage) {
      try body(UnsafeBufferPointer(start: held == 0 ? nil : base, count: held))
    }
  }

  // MARK: Writing (the query's side)

  /// Makes the buffer ready to take `extra` more slots after the first `written` of the answer
  /// being written: gives it storage of its own when a copy shares it (or it has none), and
  /// room for `written + extra` slots, keeping the `written` slots. `base` is then non-nil.
  @inlinable @inline(__always)
  internal mutating func _prepare(held written: Int, extra: Int) {
    held = written
    if !isKnownUniquelyReferenced(&storage) || capacity &- written < extra {
      _replaceStorage(minimumCapacity: written + extra)
    }
  }

  /// Records the answer's size: `written` slots from `base`.
  @inlinable @inline(__always)
  internal mutating func _endAnswer(held written: Int) {
    held = written
  }

  /// Moves the `held` slots to a new allocation of at least `minimumCapacity` slots, and of at
  /// least twice the present capacity when that is too small.
  @usableFromInline
  internal mutating func _replaceStorage(minimumCapacity: Int) {
    let newCapacity =
      minimumCapacity > capacity ? Swift.max(minimumCapacity, 2 &* capacity, 16) : capacity
    let replacement = Storage(capacity: newCapacity)
    if let base { replacement.base.update(from: base, count: held) }
    withExtendedLifetime(storage) {}
    storage = replacement
    base = replacement.base
    capacity = replacement.capacity
  }
}
