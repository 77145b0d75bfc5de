import Testing

@testable import GeofenceEngine

@Suite struct AuthorizationTimelineInputTests {
  @Test func byteOrderMarkIsSkippedInJSONLinesAndCSV() throws {
    let json = try AuthorizationTimeline.parse(
      "\u{FEFF}{\"time\": 1796014800, \"status\": \"denied\"}\n")
    #expect(json.changes.map(\.time) == [1_796_014_800])
    #expect(json.changes[0].state.status == .denied)
    let csv = try AuthorizationTimeline.parse("\u{FEFF}time,status\n1796014800,denied\n")
    #expect(csv.changes.map(\.time) == [1_796_014_800])
    #expect(csv.changes[0].state.status == .denied)
  }

  /// An empty timeline (the wrong file, or one truncated) is refused like any malformed one,
  /// and an unknown column is named at the header's line.
  @Test func anEmptyTimelineAndAnUnknownColumnAreRefused() {
    for text in ["", "  \n\n"] {
      #expect(
        throws: AuthorizationTimelineError(line: 1, message: "the timeline is empty (no header)")
      ) { try AuthorizationTimeline.parse(text) }
    }
    #expect(
      throws: AuthorizationTimelineError(line: 1, message: "unknown column 'foo' in the header")
    ) { try AuthorizationTimeline.parse("time,status,foo\n2019-01-25T20:10:00Z,denied,1\n") }
  }

  @Test func outOfOrderLinesAreAnErrorNamingBothLines() {
    let text = """
      {"time": 1796014830, "status": "denied"}
      {"time": 1796014830, "status": "always"}
      {"time": 1796014810, "status": "always"}
      """
    #expect(
      throws: AuthorizationTimelineError(
        line: 3,
        message:
          "time 2026-11-30T05:00:10.000Z is before line 2's time 2026-11-30T05:00:30.000Z; "
          + "lines must be in time order")
    ) { try AuthorizationTimeline.parse(text) }
    #expect(throws: AuthorizationTimelineError.self) {
      try AuthorizationTimeline.parse("time,status\n20,always\n10,denied\n")
    }
  }

  @Test func equalTimesKeepFileOrder() throws {
    let t = try AuthorizationTimeline.parse("time,status\n10,denied\n10,always\n")
    #expect(t.changes.map(\.state.status) == [.denied, .authorizedAlways])
  }

  @Test func jsonConsentMustBeABoolean() {
    #expect(
      throws: AuthorizationTimelineError(
        line: 1, message: #"consent must be true or false (a JSON boolean), found "yes""#)
    ) { try AuthorizationTimeline.parse(#"{"time": 1796014800, "consent": "yes"}"#) }
    #expect(throws: AuthorizationTimelineError.self) {
      try AuthorizationTimeline.parse(#"{"time": 1796014800, "registered": 1}"#)
    }
  }

  @Test func timeUsesTheOneNumberGrammar() {
    for bad in ["0x6B0D3A50", "inf", "nan", "1e400"] {
      #expect(throws: AuthorizationTimelineError.self, "\(bad)") {
        try AuthorizationTimeline.parse("time,status\n\(bad),always\n")
      }
    }
  }

  @Test func badJSONNamesTheLine() {
    #expect(throws: AuthorizationTimelineError.self) {
      try AuthorizationTimeline.parse("{\"time\": 1, \"status\": \"always\"}\n{\"time\": NaN}\n")
    }
    do {
      _ = try AuthorizationTimeline.parse("{\"time\": 1}\n{\"time\": NaN}\n")
    } catch {
      #expect(error.line == 2)
    }
  }
}
