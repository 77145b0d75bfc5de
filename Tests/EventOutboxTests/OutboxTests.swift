import EventOutbox
import Foundation
import GeofenceTestSupport
import Testing

@Suite struct OutboxTests {
  let clock = ManualClock()
  let directory = temporaryDirectory()
  var path: String { directory.appendingPathComponent("outbox.sqlite").path }

  func open(_ configuration: OutboxConfiguration = OutboxConfiguration()) throws -> Outbox {
    try Outbox(path: path, configuration: configuration, clock: clock)
  }

  @Test func enqueueIsDurableAndOrdered() async throws {
    do {
      let outbox = try open()
      try outbox.enqueue(contentsOf: makeEvents(0..<5))
      #expect(try outbox.enqueue(makeEvents(5..<6)[0]))
    }
    let reopened = try open()
    #expect(try reopened.queuedEvents().map(\.id) == (0..<6).map { "e\($0)" })
    #expect(try reopened.counts().pending == 6)
  }

  @Test func sameIdIsStoredOnce() async throws {
    let outbox = try open()
    #expect(try outbox.enqueue(makeEvents(0..<1)[0]))
    #expect(try !outbox.enqueue(makeEvents(0..<1)[0]))
    #expect(try outbox.counts().pending == 1)
  }

  @Test func recentlyDeliveredEventsAreNotQueuedAgain() async throws {
    let outbox = try open(OutboxConfiguration(deliveredIDMemory: 3))
    let transport = FakeTransport(clock: clock)
    try outbox.enqueue(contentsOf: makeEvents(0..<5))
    try await OutboxUploader(outbox: outbox, transport: transport).flush()
    // e2, e3, e4 are remembered; e0 and e1 were forgotten (memory of 3).
    #expect(try outbox.enqueue(contentsOf: makeEvents(0..<5)) == 2)
    #expect(try outbox.queuedEvents().map(\.id) == ["e0", "e1"])
    let forgetful = try Outbox(
      path: ":memory:", configuration: OutboxConfiguration(deliveredIDMemory: 0), clock: clock)
    try forgetful.enqueue(contentsOf: makeEvents(0..<2))
    try await OutboxUploader(outbox: forgetful, transport: transport).flush()
    #expect(try forgetful.enqueue(contentsOf: makeEvents(0..<2)) == 2)
  }

  @Test func invalidEventsAreRefusedAndStoreNothing() async throws {
    let outbox = try open()
    #expect(throws: OutboxError.self) {
      try outbox.enqueue(contentsOf: [
        OutboxEvent(id: "ok", payload: "{}"), OutboxEvent(id: "bad", payload: "[1]"),
      ])
    }
    #expect(throws: OutboxError.self) {
      try outbox.enqueue(OutboxEvent(id: "x", payload: #"{"id":"y"}"#))
    }
    #expect(throws: OutboxError.self) { try outbox.enqueue(OutboxEvent(id: "", payload: "{}")) }
    #expect(try outbox.counts().pending == 0)
  }

  @Test func capEvictsOldestAndCountsThem() async throws {
    let outbox = try open(OutboxConfiguration(capacity: 10))
    try outbox.enqueue(contentsOf: makeEvents(0..<7))
    for e in makeEvents(7..<13) { try outbox.enqueue(e) }
    let counts = try outbox.counts()
    #expect(counts.pending == 10)
    #expect(counts.evicted == 3)
    #expect(try outbox.queuedEvents().map(\.id).first == "e3")
  }

  @Test func deleteAllEmptiesQueueAndDeadLetters() async throws {
    let outbox = try open()
    try outbox.enqueue(contentsOf: makeEvents(0..<4))
    let transport = FakeTransport(clock: clock)
    transport.script = [
      { ids in
        var stored: [String] = []
        return FakeTransport.accept(ids, into: &stored, rejecting: ["e1": "bad"])
      }
    ]
    try await OutboxUploader(outbox: outbox, transport: transport).flush()
    try outbox.enqueue(contentsOf: makeEvents(4..<6))
    #expect(try outbox.counts().deadLetters == 1)
    #expect(try outbox.deleteAll() == 3)
    let counts = try outbox.counts()
    #expect(counts.queued == 0 && counts.deadLetters == 0 && counts.deleted == 3)
  }

  @Test func stableIDsAreDeterministicAndDistinct() {
    let a = OutboxEventID.derive(["hnl", "v3", "enter", "1796014800.000", "dev1"])
    #expect(a == OutboxEventID.derive(["hnl", "v3", "enter", "1796014800.000", "dev1"]))
    #expect(a.count == 3 + 32 && a.hasPrefix("ev-"))
    #expect(a != OutboxEventID.derive(["hnl", "v3", "exit", "1796014800.000", "dev1"]))
    #expect(OutboxEventID.derive(["ab", "c"]) != OutboxEventID.derive(["a", "bc"]))
    // The empty input hashes to the offset basis.
    #expect(OutboxEventID.derive([], prefix: "") == "6c62272e07bb014262b821756295c58d")
    // An independent 64-bit-halves implementation agrees.
    #expect(
      OutboxEventID.derive(["a"], prefix: "")
        == OutboxEventIDOracle.fnv1a128([1, 0, 0, 0, 0, 0, 0, 0, 0x61]))
    #expect(
      OutboxEventID.derive(["zürich", ""], prefix: "")
        == OutboxEventIDOracle.fnv1a128(
          [7, 0, 0, 0, 0, 0, 0, 0] + Array("zürich".utf8) + [0, 0, 0, 0, 0, 0, 0, 0]))
    // Counts around a byte's end (a count below 256 takes a shortcut for its zero bytes).
    for n in [255, 256, 300] {
      let long = String(repeating: "x", count: n)
      #expect(
        OutboxEventID.derive([long, "d"], prefix: "")
          == OutboxEventIDOracle.fnv1a128(
            [UInt8(n & 0xFF), UInt8(n >> 8), 0, 0, 0, 0, 0, 0] + Array(long.utf8)
              + [1, 0, 0, 0, 0, 0, 0, 0, UInt8(ascii: "d")]))
    }
  }
}

/// An independent FNV-1a 128 over bytes, with the multiplication spelled out in 64-bit halves.
enum OutboxEventIDOracle {
  static func fnv1a128(_ bytes: [UInt8]) -> String {
    var hi: UInt64 = 0x6c62_272e_07bb_0142
    var lo: UInt64 = 0x62b8_2175_6295_c58d
    for b in bytes {
      lo ^= UInt64(b)
      // (hi·2^64 + lo) · (2^88 + 0x13b) mod 2^128
      let (p1hi, p1lo) = lo.multipliedFullWidth(by: 0x13b)
      hi = hi &* 0x13b &+ p1hi &+ (lo << 24)
      lo = p1lo
    }
    let h = String(hi, radix: 16)
    let l = String(lo, radix: 16)
    return String(repeating: "0", count: 16 - h.count) + h
      + String(repeating: "0", count: 16 - l.count) + l
  }
}
