import Foundation
import Testing

@testable import GeofenceEngine

/// The `url` member of geofence metadata, and the byte search that skips the JSON parse for
/// metadata without one, against `String.contains` as the oracle.
@Suite struct MetadataURLTests {
  @Test(arguments: [
    #"{"url":"https://example.com/a"}"#, #"{"a":1,"url" :"x:y"}"#, #""url""#, #"x"url""#,
    #"{"urls":"https://x"}"#, #"{"u rl":1}"#, #"{"URL":"https://x"}"#, "", "\"url", #"url""#,
    #"{"é":"\"url\""}"#, #"{"a":"😀","url":"myapp://x"}"#,
  ])
  func theByteSearchAgreesWithStringContains(json: String) {
    #expect(LiveGeofenceSet.mentionsURLKey(json) == json.contains("\"url\""))
  }

  @Test func urlsAreTakenOnlyWhenAbsolute() {
    #expect(
      LiveGeofenceSet.url(fromMetadata: #"{"url":"https://example.com/a"}"#)
        == "https://example.com/a")
    #expect(
      LiveGeofenceSet.url(fromMetadata: #"{"a":1,"url":"myapp://offer/7"}"#) == "myapp://offer/7")
    #expect(LiveGeofenceSet.url(fromMetadata: #"{"url":"not a url"}"#) == nil)
    #expect(LiveGeofenceSet.url(fromMetadata: #"{"urls":"https://x"}"#) == nil)
    #expect(LiveGeofenceSet.url(fromMetadata: nil) == nil)
  }
}
