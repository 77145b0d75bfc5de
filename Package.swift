// swift-tools-version:6.0
import PackageDescription

/// Library code runs a nonisolated async function on its caller's actor
/// (`nonisolated(nonsending)`, SE-0461), so that an engine owned by an actor or the main actor
/// can be awaited there; work that must leave the caller's actor says `@concurrent`.
let libraryIsolation: [SwiftSetting] = [.enableUpcomingFeature("NonisolatedNonsendingByDefault")]

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
    .target(name: "GeofenceGeometry", swiftSettings: libraryIsolation),
    .target(name: "ConcurrentParts", swiftSettings: libraryIsolation),
    .target(
      name: "GeofenceIndex",
      dependencies: ["GeofenceGeometry", "BinarySnapshot", "ConcurrentParts"],
      swiftSettings: libraryIsolation),
    .target(
      name: "GeofenceTransitions",
      dependencies: ["GeofenceGeometry", "GeofenceIndex", "BinarySnapshot"],
      swiftSettings: libraryIsolation),

    .target(name: "LocationAuthorization", swiftSettings: libraryIsolation),

    // Bridges to C.
    .target(name: "GEOSBridge", dependencies: ["CGEOS"], swiftSettings: libraryIsolation),
    .target(name: "SQLiteStore", dependencies: ["CSQLite"], swiftSettings: libraryIsolation),
    .target(name: "XMLStream", dependencies: ["CLibXML2"], swiftSettings: libraryIsolation),

    // Formats.
    .target(name: "NumberText", swiftSettings: libraryIsolation),
    .target(name: "DelimitedText", dependencies: ["NumberText"], swiftSettings: libraryIsolation),
    .target(name: "JSONText", swiftSettings: libraryIsolation),
    .target(name: "BinarySnapshot", swiftSettings: libraryIsolation),
    .target(
      name: "GeofenceDefinitions",
      dependencies: [
        "GeofenceGeometry", "GEOSBridge", "DelimitedText", "JSONText", "NumberText",
        "BinarySnapshot", "ConcurrentParts",
      ], swiftSettings: libraryIsolation),
    .target(
      name: "TrackFormats",
      dependencies: ["GeofenceGeometry", "DelimitedText", "NumberText", "XMLStream"],
      swiftSettings: libraryIsolation),

    // Time, HTTP, sync and outbox.
    .target(name: "RetryTiming", swiftSettings: libraryIsolation),
    .target(
      name: "Networking", dependencies: ["RetryTiming", "CCrypto"], swiftSettings: libraryIsolation),
    .target(
      name: "GeofenceSync",
      dependencies: [
        "GeofenceGeometry", "GeofenceIndex", "GeofenceTransitions", "GeofenceDefinitions",
        "SQLiteStore", "RetryTiming", "Networking",
      ], swiftSettings: libraryIsolation),
    .target(
      name: "EventOutbox", dependencies: ["SQLiteStore", "RetryTiming", "Networking", "JSONText"],
      swiftSettings: libraryIsolation),

    // Facade and command-line tool.
    .target(
      name: "GeofenceEngine",
      dependencies: [
        "GeofenceGeometry", "GeofenceIndex", "GeofenceTransitions", "GeofenceDefinitions",
        "TrackFormats", "LocationAuthorization", "GeofenceSync", "EventOutbox", "DelimitedText",
        "SQLiteStore", "RetryTiming", "JSONText", "Networking", "NumberText", "BinarySnapshot",
      ], swiftSettings: libraryIsolation),
    .target(
      name: "GeofenceBenchmarks",
      dependencies: ["GeofenceGeometry", "GeofenceIndex", "GeofenceTransitions", "GEOSBridge"],
      swiftSettings: libraryIsolation),
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
