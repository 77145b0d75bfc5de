import GeofenceTestSupport
import Testing

@testable import GeofenceTransitions

struct SlotSetTests {
  /// Random insertions and removals against `Set<Int32>`: membership of every value in the
  /// range after each step, and the count. Small ranges make long probe runs and many
  /// backward shifts; the large range spreads the slots.
  @Test(arguments: [(UInt64(1), Int32(40)), (UInt64(2), Int32(300)), (UInt64(3), Int32.max)])
  func matchesSetUnderInsertAndRemove(seed: UInt64, upper: Int32) {
    var rng = SeededGenerator(seed: seed)
    var set = SlotSet()
    var oracle = Set<Int32>()
    var probes: [Int32] = upper <= 300 ? Array(0..<upper) : []
    for step in 0..<4_000 {
      let slot = Int32.random(in: 0..<upper, using: &rng)
      if upper > 300 { probes.append(slot) }
      // Mostly insertions while small, then as many removals as insertions.
      let removing = !oracle.isEmpty && Double.random(in: 0..<1, using: &rng) < 0.5
      if removing {
        let victim =
          Bool.random(using: &rng) ? oracle.randomElement(using: &rng) ?? slot : slot
        set.remove(victim)
        oracle.remove(victim)
      } else if !oracle.contains(slot) {
        set.insert(slot)
        oracle.insert(slot)
      }
      #expect(set.count == oracle.count, "seed \(seed) step \(step)")
      if step % 50 == 0 || upper <= 40 {
        for p in probes where set.contains(p) != oracle.contains(p) {
          Issue.record("seed \(seed) step \(step): \(p) in set \(set.contains(p))")
        }
        #expect(Set(set.elements) == oracle, "seed \(seed) step \(step)")
      }
    }
  }

  @Test func buildFromSequenceAndRemoveAll() {
    let slots: [Int32] = [0, 7, 8, 15, 16, 1_000_000, Int32.max, 3]
    var set = SlotSet(slots)
    #expect(set.count == slots.count)
    #expect(set.elements.sorted() == slots.sorted())
    for s in slots { #expect(set.contains(s)) }
    for s: Int32 in [1, 2, 9, 999_999, Int32.max - 1] { #expect(!set.contains(s)) }
    set.removeAll()
    #expect(set.count == 0 && set.elements.isEmpty)
    for s in slots { #expect(!set.contains(s)) }
    set.remove(7)  // absent: no effect
    set.insert(7)
    #expect(set.contains(7) && set.count == 1)
  }

  @Test func emptySetContainsNothing() {
    let set = SlotSet()
    #expect(!set.contains(0) && !set.contains(Int32.max) && set.count == 0)
  }
}
