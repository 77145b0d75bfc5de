import RetryTiming
import Testing

/// A generator that returns the given words in turn, so that each jitter draw is known.
private struct ScriptedGenerator: RandomNumberGenerator {
  var words: [UInt64]
  var drawn = 0

  mutating func next() -> UInt64 {
    defer { drawn += 1 }
    return words[drawn]
  }
}

@Suite struct RetryPolicyTests {
  @Test func defaultsAreTheBackgroundOnes() {
    let p = RetryPolicy()
    #expect(p.maximumAttempts == 8)
    #expect(p.baseDelaySeconds == 1 && p.maximumDelaySeconds == 60)
    #expect(p.maximumRetryAfterSeconds == 300)
    #expect(RetryPolicy.none.maximumAttempts == 1)
  }

  @Test func ceilingDoublesUpToTheCap() {
    let p = RetryPolicy(baseDelaySeconds: 0.5, maximumDelaySeconds: 10)
    #expect((1...7).map { p.ceiling(retry: $0) } == [0.5, 1, 2, 4, 8, 10, 10])
    // Far retries stay at the cap (2^(k-1) would overflow a shift or an Int power).
    #expect(p.ceiling(retry: 5_000) == 10)
    #expect(p.ceiling(retry: .max) == 10)
    // Below 1 counts as the first retry.
    #expect(p.ceiling(retry: 0) == 0.5 && p.ceiling(retry: -3) == 0.5)
    let uncapped = RetryPolicy(baseDelaySeconds: 1, maximumDelaySeconds: .infinity)
    #expect(uncapped.ceiling(retry: 11) == 1024)
    #expect(uncapped.ceiling(retry: 2_000) == 0x1p1023)
  }

  /// Full jitter: the top 53 bits of one word, as a fraction of the ceiling.
  @Test func backoffIsTheDrawnFractionOfTheCeiling() {
    let p = RetryPolicy(baseDelaySeconds: 2, maximumDelaySeconds: 100)
    var g = ScriptedGenerator(words: [0, 1 << 63, .max, 0x7FF])
    #expect(p.backoff(retry: 1, using: &g) == 0)
    #expect(p.backoff(retry: 3, using: &g) == 4)  // 0.5 of 8
    #expect(p.backoff(retry: 2, using: &g) == 4 * (1 - 0x1p-53))  // just under the ceiling
    #expect(p.backoff(retry: 1, using: &g) == 0)  // the low 11 bits are not used
    #expect(g.drawn == 4)
  }

  @Test func retryAfterIsAFloorAndEveryWaitDrawsOnce() {
    let p = RetryPolicy(baseDelaySeconds: 1, maximumDelaySeconds: 60)
    var g = ScriptedGenerator(words: [1 << 63, 1 << 63, 1 << 63, 1 << 63])
    #expect(p.wait(retry: 1, retryAfterSeconds: 7, using: &g) == 7)
    #expect(p.wait(retry: 4, retryAfterSeconds: 3, using: &g) == 4)  // 0.5 of 8 beats 3
    #expect(p.wait(retry: 2, retryAfterSeconds: nil, using: &g) == 1)
    #expect(p.wait(retry: 2, retryAfterSeconds: -5, using: &g) == 1)
    #expect(g.drawn == 4)
  }

  @Test func retryAfterIsReadAsFiniteSeconds() {
    #expect(RetryPolicy.retryAfterSeconds("7") == 7)
    #expect(RetryPolicy.retryAfterSeconds(" 2.5\t") == 2.5)
    #expect(RetryPolicy.retryAfterSeconds("-5") == 0)
    for text in ["nan", "inf", "-inf", "", "soon", "Wed, 21 Oct 2026 07:28:00 GMT"] {
      #expect(RetryPolicy.retryAfterSeconds(text) == nil, "\(text)")
    }
  }

  /// RFC 9110 §5.6.7's example instant, 1994-11-06T08:49:37Z = 784 111 777 s, in its three
  /// forms, read against a clock 10 s before it; a date in the past waits 0.
  @Test func retryAfterIsReadAsAnHTTPDateAgainstNow() {
    let instant = 784_111_777.0
    for text in [
      "Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT",
      "Sun Nov  6 08:49:37 1994", " Sun, 06 Nov 1994 08:49:37 GMT ",
    ] {
      #expect(RetryPolicy.retryAfterSeconds(text, now: instant - 10) == 10, "\(text)")
    }
    #expect(RetryPolicy.retryAfterSeconds("Sun, 06 Nov 1994 08:49:37 GMT", now: instant + 5) == 0)
    #expect(RetryPolicy.retryAfterSeconds("7", now: instant) == 7)
    for text in ["soon", "", "Sun, 06 Nov 1994 25:49:37 GMT", "Sun, 06 Nov 1994"] {
      #expect(RetryPolicy.retryAfterSeconds(text, now: instant) == nil, "\(text)")
    }
  }

  @Test func longRetryAfterIsNotWaitedOut() {
    let p = RetryPolicy(maximumRetryAfterSeconds: 120)
    #expect(p.waitsOut(retryAfterSeconds: nil))
    #expect(p.waitsOut(retryAfterSeconds: 0))
    #expect(p.waitsOut(retryAfterSeconds: 120))
    #expect(!p.waitsOut(retryAfterSeconds: 120.001))
    #expect(!p.waitsOut(retryAfterSeconds: .infinity))
    #expect(!p.waitsOut(retryAfterSeconds: .nan))
    #expect(!RetryPolicy(maximumRetryAfterSeconds: 0).waitsOut(retryAfterSeconds: 1))
  }
}
