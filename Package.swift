// swift-tools-version:6.0
import PackageDescription

let package = Package(
  name: "Geofence",
  products: [
    .library(name: "GeofenceEngine", targets: ["GeofenceEngine"]),
    .executable(name: "geofence", targets: ["geofence"]),
  ],
  targets: [
    // C libraries from Debian's -dev packages; imported only by the bridge modules.
    .systemLibrary(
      name: "CGEOS", pkgConfig: "geos", providers: [.apt(["libgeos-dev"])]),
    .systemLibrary(
      name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
    .systemLibrary(
      name: "CCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
    .systemLibrary(
      name: "CLibXML2", pkgConfig: "libxml-2.0", providers: [.apt(["libxml2-dev"])]),

    // Pure, value-typed core.
    .target(name: "GeofenceGeometry"),
    .target(name: "ConcurrentParts"),
    .target(
      name: "GeofenceIndex",
      dependencies: ["GeofenceGeometry", "BinarySnapshot", "ConcurrentParts"]
    ),
    .target(
      name: "GeofenceTransitions",
      dependencies: ["GeofenceGeometry", "GeofenceIndex", "BinarySnapshot"]),

    .target(name: "LocationAuthorization"),

    // Bridges to C.
    .target(name: "GEOSBridge", dependencies: ["CGEOS"]),
    .target(name: "SQLiteStore", dependencies: ["CSQLite"]),
    .target(name: "XMLStream", dependencies: ["CLibXML2"]),

    // Formats.
    .target(name: "NumberText"),
    .target(name: "DelimitedText", dependencies: ["NumberText"]),
    .target(name: "JSONText"),
    .target(name: "BinarySnapshot"),
    .target(
      name: "GeofenceDefinitions",
      dependencies: [
        "GeofenceGeometry", "GEOSBridge", "DelimitedText", "JSONText", "NumberText",
        "BinarySnapshot", "ConcurrentParts",
      ]),
    .target(
      name: "TrackFormats",
      dependencies: ["GeofenceGeometry", "DelimitedText", "NumberText", "XMLStream"]),

    // Time, HTTP, sync and outbox.
    .target(name: "RetryTiming"),
    .target(name: "Networking", dependencies: ["RetryTiming", "CCrypto"]),
    .target(
      name: "GeofenceSync",
      dependencies: [
        "GeofenceGeometry", "GeofenceIndex", "GeofenceTransitions", "GeofenceDefinitions",
        "SQLiteStore", "RetryTiming", "Networking",
      ]),
    .target(
      name: "EventOutbox", dependencies: ["SQLiteStore", "RetryTiming", "Networking", "JSONText"]),

    // Facade and command-line tool.
    .target(
      name: "GeofenceEngine",
      dependencies: [
        "GeofenceGeometry", "GeofenceIndex", "GeofenceTransitions", "GeofenceDefinitions",
        "TrackFormats", "LocationAuthorization", "GeofenceSync", "EventOutbox", "DelimitedText",
        "SQLiteStore", "RetryTiming", "JSONText", "Networking", "NumberText", "BinarySnapshot",
      ]),
    .target(
      name: "GeofenceBenchmarks",
      dependencies: ["GeofenceGeometry", "GeofenceIndex", "GeofenceTransitions", "GEOSBridge"]),
    .executableTarget(
      name: "geofence",
      dependencies: [
        "GeofenceEngine", "GeofenceBenchmarks", "TrackFormats", "RetryTiming", "Networking",
        "JSONText", "NumberText", "DelimitedText",
      ]),

    // Tests.
    .target(
      name: "GeofenceTestSupport", dependencies: ["GeofenceGeometry", "RetryTiming"],
      path: "Tests/GeofenceTestSupport"),
    .testTarget(
      name: "GeofenceGeometryTests", dependencies: ["GeofenceGeometry", "GeofenceTestSupport"]),
    .testTarget(
      name: "GeofenceIndexTests",
      dependencies: ["GeofenceIndex", "GeofenceGeometry", "GeofenceTestSupport"]),
    .testTarget(
      name: "GeofenceTransitionsTests",
      dependencies: [
        "GeofenceTransitions", "GeofenceIndex", "GeofenceGeometry", "GeofenceTestSupport",
        "BinarySnapshot",
      ]),
    .testTarget(
      name: "DelimitedTextTests", dependencies: ["DelimitedText", "GeofenceTestSupport"]),
    .testTarget(name: "NumberTextTests", dependencies: ["NumberText"]),
    .testTarget(name: "JSONTextTests", dependencies: ["JSONText", "GeofenceTestSupport"]),
    .testTarget(name: "LocationAuthorizationTests", dependencies: ["LocationAuthorization"]),
    .testTarget(
      name: "GEOSBridgeTests",
      dependencies: ["GEOSBridge", "GeofenceGeometry", "GeofenceTestSupport"]),
    .testTarget(name: "SQLiteStoreTests", dependencies: ["SQLiteStore", "GeofenceTestSupport"]),
    .testTarget(name: "XMLStreamTests", dependencies: ["XMLStream"]),
    .testTarget(
      name: "GeofenceDefinitionsTests",
      dependencies: [
        "GeofenceDefinitions", "GeofenceGeometry", "GeofenceTestSupport", "DelimitedText",
      ]),
    .testTarget(
      name: "TrackFormatsTests",
      dependencies: ["TrackFormats", "GeofenceGeometry", "GeofenceTestSupport"]),
    .testTarget(
      name: "GeofenceEngineTests",
      dependencies: [
        "GeofenceEngine", "GeofenceTestSupport", "EventOutbox", "GeofenceTransitions",
        "LocationAuthorization", "GeofenceDefinitions", "TrackFormats", "GeofenceGeometry",
        "GeofenceSync", "RetryTiming", "Networking", "BinarySnapshot", "GeofenceIndex",
        "SQLiteStore",
      ]),
    .testTarget(
      name: "GeofenceBenchmarksTests", dependencies: ["GeofenceBenchmarks", "GeofenceTestSupport"]),
    .testTarget(
      name: "GeofenceSyncTests",
      dependencies: ["GeofenceSync", "Networking", "RetryTiming", "GeofenceTestSupport"]),
    .testTarget(
      name: "EventOutboxTests",
      dependencies: ["EventOutbox", "Networking", "RetryTiming", "GeofenceTestSupport"]),
    .testTarget(name: "RetryTimingTests", dependencies: ["RetryTiming"]),
    .testTarget(
      name: "NetworkingTests", dependencies: ["Networking", "RetryTiming", "GeofenceTestSupport"]),
    .testTarget(name: "GeofenceCLITests", dependencies: ["GeofenceTestSupport"]),
  ],
  swiftLanguageModes: [.v6]
)
