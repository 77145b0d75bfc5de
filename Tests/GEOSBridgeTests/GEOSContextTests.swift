import GEOSBridge
import Testing

@Test func aValidPolygonIsValidAndContainsAnInteriorPoint() throws {
  let geos = try GEOSContext()
  let square = try geos.polygon(fromWKT: "POLYGON ((0 0, 10 0, 10 10, 0 10, 0 0))")
  #expect(try square.validity() == .valid)
  #expect(try square.typeName() == "Polygon")
  #expect(try square.contains(geos.point(x: 5, y: 5)))
  #expect(try !square.contains(geos.point(x: 15, y: 5)))
  // A point on the boundary is not contained (DE-9IM).
  #expect(try !square.contains(geos.point(x: 10, y: 5)))
  #expect(try square.distance(to: geos.point(x: 13, y: 14)) == 5)
  #expect(try square.distance(to: geos.point(x: 5, y: 5)) == 0)
}

@Test func aBowTieIsInvalidWithASelfIntersectionReason() throws {
  let geos = try GEOSContext()
  let bowTie = try geos.polygon(fromWKT: "POLYGON ((0 0, 10 10, 10 0, 0 10, 0 0))")
  let validity = try bowTie.validity()
  #expect(!validity.isValid)
  guard case .invalid(let reason) = validity else {
    Issue.record("expected invalid")
    return
  }
  #expect(reason.contains("Self-intersection"))
  #expect(reason.contains("5 5"))
}

@Test func badWKTThrowsAGEOSErrorWithGEOSMessages() throws {
  let geos = try GEOSContext()
  do {
    _ = try geos.polygon(fromWKT: "POLYGON ((0 0, 1 0, 1 1")
    Issue.record("expected an error")
  } catch {
    #expect(error.code == .invalidWKT)
    #expect(!error.messages.isEmpty)
    #expect(error.messages.joined().contains("ParseException"))
    #expect(error.description.hasPrefix("invalid WKT: "))
  }
  #expect(
    throws: GEOSError(code: .invalidWKT, messages: ["ParseException: Unknown type: 'CIRCLE'"])
  ) {
    try geos.geometry(fromWKT: "CIRCLE (0 0, 5)")
  }
  // The context stays usable after an error.
  #expect(try geos.polygon(fromWKT: "POLYGON ((0 0, 1 0, 1 1, 0 0))").validity() == .valid)
}

@Test func aPointIsNotAPolygon() throws {
  let geos = try GEOSContext()
  #expect(throws: GEOSError(code: .unexpectedGeometryType("Point"))) {
    try geos.polygon(fromWKT: "POINT (1 2)")
  }
  let multi = try geos.polygon(
    fromWKT: "MULTIPOLYGON (((0 0, 1 0, 1 1, 0 0)), ((5 5, 6 5, 6 6, 5 5)))")
  #expect(try multi.contains(geos.point(x: 5.9, y: 5.5)))
  #expect(GEOSContext.libraryVersion.hasPrefix("3."))
}

@Test func aPolygonWithAHoleExcludesTheHole() throws {
  let geos = try GEOSContext()
  let ring = try geos.polygon(
    fromWKT: "POLYGON ((0 0, 10 0, 10 10, 0 10, 0 0), (4 4, 6 4, 6 6, 4 6, 4 4))")
  #expect(try ring.validity() == .valid)
  #expect(try !ring.contains(geos.point(x: 5, y: 5)))
  #expect(try ring.contains(geos.point(x: 2, y: 2)))
  #expect(try ring.distance(to: geos.point(x: 5, y: 5)) == 1)
}
