/// A set of region slots (non-negative `Int32`): open addressing with linear probing in a
/// power-of-two table at most half full, Fibonacci hashing, and backward-shift deletion (no
/// tombstones, so probe runs stay short however many slots come and go).
///
/// The detector keeps the slots of the regions a device is inside in one, so that each query
/// result is matched in O(1) expected time (about one probe) instead of a binary search of a
/// sorted list.
struct SlotSet: Sendable {
  /// The table: a slot, or −1 for an empty position. Empty until the first insertion, then a
  /// power of two of at least 8 positions.
  private var table: [Int32] = []
  /// `32 − log2(table.count)`: a slot's home position is the top bits of its hash.
  private var shift: UInt32 = 32
  /// Number of slots held.
  private(set) var count = 0

  init() {}

  /// A set holding `slots`.
  /// - Precondition: the slots are distinct and non-negative.
  init(_ slots: some Sequence<Int32>) {
    for slot in slots { insert(slot) }
  }

  /// The home position of `slot` in a table of `2^(32 − shift)` positions.
  @inline(__always)
  private static func home(_ slot: Int32, shift: UInt32) -> Int {
    // Knuth's multiplicative hash: 2^32 / φ, odd, so consecutive slots spread over the table.
    Int((UInt32(bitPattern: slot) &* 0x9E37_79B9) &>> shift)
  }

  /// Whether `slot` is in the set. O(1) expected; no allocation.
  @inline(__always)
  func contains(_ slot: Int32) -> Bool {
    if count == 0 { return false }
    return table.withUnsafeBufferPointer { t in
      let mask = t.count &- 1
      var i = Self.home(slot, shift: shift)
      while true {
        let held = t[i]
        if held == slot { return true }
        if held < 0 { return false }
        i = (i &+ 1) & mask
      }
    }
  }

  /// Adds `slot`. O(1) amortised (the table doubles when it would be more than half full).
  /// - Precondition: `slot >= 0` and `slot` is not in the set.
  mutating func insert(_ slot: Int32) {
    precondition(slot >= 0, "SlotSet holds non-negative slots")
    if 2 * (count + 1) > table.count { grow() }
    let mask = table.count - 1
    var i = Self.home(slot, shift: shift)
    while table[i] >= 0 {
      precondition(table[i] != slot, "slot already in the set")
      i = (i + 1) & mask
    }
    table[i] = slot
    count += 1
  }

  /// Removes `slot` if present. O(1) expected: the slots after it in its probe run that would
  /// no longer be reachable move back into the gap.
  mutating func remove(_ slot: Int32) {
    if count == 0 { return }
    let mask = table.count - 1
    var gap = Self.home(slot, shift: shift)
    while table[gap] != slot {
      if table[gap] < 0 { return }
      gap = (gap + 1) & mask
    }
    var next = gap
    while true {
      next = (next + 1) & mask
      let moved = table[next]
      if moved < 0 { break }
      // `moved` stays when its home lies cyclically in (gap, next]: it is still reachable.
      let home = Self.home(moved, shift: shift)
      let reachable = gap <= next ? (gap < home && home <= next) : (gap < home || home <= next)
      if reachable { continue }
      table[gap] = moved
      gap = next
    }
    table[gap] = -1
    count -= 1
  }

  /// Removes every slot, keeping the table's size.
  mutating func removeAll() {
    if count == 0 { return }
    for i in table.indices { table[i] = -1 }
    count = 0
  }

  /// The slots held, in no particular order.
  var elements: [Int32] { table.filter { $0 >= 0 } }

  /// Doubles the table (8 positions at first) and re-inserts every slot.
  private mutating func grow() {
    let old = table
    let size = max(8, 2 * table.count)
    table = [Int32](repeating: -1, count: size)
    shift = UInt32(32 - size.trailingZeroBitCount)
    count = 0
    for slot in old where slot >= 0 { insert(slot) }
  }
}
