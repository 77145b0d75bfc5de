import GeofenceTransitions
import Foundation
import GeofenceGeometry

/// Draws a replay as a plain SVG map (no tiles, no network): the track, the geofences it comes
/// near, and each event as a labelled marker.
///
/// Projection: equirectangular, longitudes scaled by cos(mean latitude) so that circles look
/// round; longitudes are unwrapped along the track so a track across ±180 stays continuous.
public struct SVGMap {
  /// Canvas width in pixels (height follows the track's aspect ratio, at most 2x width).
  public var width: Double = 1200
  /// Padding around the drawing, in pixels.
  public var padding: Double = 40

  public init() {}

  /// Renders the map.
  /// - Parameters:
  ///   - tracks: the fixes used, one polyline per device, in time order.
  ///   - geofences: the geofences to draw (already filtered to those near the track).
  ///   - events: the events to mark.
  ///   - title: a caption drawn at the top.
  /// - Returns: the SVG document text.
  public func render(
    tracks: [[Coordinate]], geofences: [Geofence], events: [GeofenceEvent], title: String
  ) -> String {
    let allPoints = tracks.flatMap { $0 }
    guard let first = allPoints.first else {
      return
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"400\" height=\"60\"><text x=\"10\" y=\"30\">\(escape(title)): no fixes</text></svg>\n"
    }
    let refLon = first.longitude
    func unwrap(_ lon: Double) -> Double {
      var l = lon
      while l - refLon > 180 { l -= 360 }
      while l - refLon < -180 { l += 360 }
      return l
    }
    var minLat = Double.infinity
    var maxLat = -Double.infinity
    var minLon = Double.infinity
    var maxLon = -Double.infinity
    func extend(lat: Double, lon: Double) {
      minLat = min(minLat, lat)
      maxLat = max(maxLat, lat)
      minLon = min(minLon, lon)
      maxLon = max(maxLon, lon)
    }
    for p in allPoints { extend(lat: p.latitude, lon: unwrap(p.longitude)) }
    for g in geofences {
      if let polygon = g.polygon {
        extend(lat: polygon.minLatitude, lon: unwrap(polygon.minLongitude))
        extend(lat: polygon.maxLatitude, lon: unwrap(polygon.maxLongitude))
        continue
      }
      let dLat = degrees(fromRadians: g.region.angularRadius)
      let c = g.region.center
      let dLon = dLat / max(0.01, cos(radians(fromDegrees: c.latitude)))
      extend(lat: c.latitude - dLat, lon: unwrap(c.longitude) - dLon)
      extend(lat: c.latitude + dLat, lon: unwrap(c.longitude) + dLon)
    }
    let kx = cos(radians(fromDegrees: (minLat + maxLat) / 2))
    let spanX = max((maxLon - minLon) * kx, 1e-6)
    let spanY = max(maxLat - minLat, 1e-6)
    let scale = (width - 2 * padding) / max(spanX, spanY / 2)
    let height = spanY * scale + 2 * padding + 30
    func x(_ lon: Double) -> Double { padding + (unwrap(lon) - minLon) * kx * scale }
    func y(_ lat: Double) -> Double { 30 + padding + (maxLat - lat) * scale }
    func f(_ v: Double) -> String { String(format: "%.1f", v) }

    var out = """
      <svg xmlns="http://www.w3.org/2000/svg" width="\(f(width))" height="\(f(height))" \
      viewBox="0 0 \(f(width)) \(f(height))" font-family="sans-serif" font-size="11">
      <rect width="100%" height="100%" fill="#fbfbf8"/>
      <text x="\(f(padding))" y="22" font-size="15" font-weight="bold">\(escape(title))</text>

      """
    for g in geofences {
      if let polygon = g.polygon {
        // Each ring as a closed path; holes cut out by the even-odd rule.
        var d = ""
        for r in 0..<polygon.ringCount {
          for (i, v) in polygon.ring(r).enumerated() {
            d += (i == 0 ? "M" : " L") + f(x(v.x)) + "," + f(y(v.y))
          }
          d += " Z "
        }
        let c = g.region.center
        out += """
          <path d="\(d)" fill="#7aa6d6" fill-opacity="0.18" fill-rule="evenodd" \
          stroke="#3b6fa8" stroke-width="1"/>
          <text x="\(f(x(c.longitude)))" y="\(f(y(c.latitude)))" fill="#3b6fa8" \
          text-anchor="middle">\(escape(g.name ?? g.id))</text>

          """
        continue
      }
      let c = g.region.center
      let rx =
        degrees(fromRadians: g.region.angularRadius)
        / max(0.01, cos(radians(fromDegrees: c.latitude))) * kx * scale
      let ry = degrees(fromRadians: g.region.angularRadius) * scale
      out += """
        <ellipse cx="\(f(x(c.longitude)))" cy="\(f(y(c.latitude)))" rx="\(f(rx))" ry="\(f(ry))" \
        fill="#7aa6d6" fill-opacity="0.18" stroke="#3b6fa8" stroke-width="1"/>
        <text x="\(f(x(c.longitude)))" y="\(f(y(c.latitude)))" fill="#3b6fa8" \
        text-anchor="middle">\(escape(g.name ?? g.id))</text>

        """
    }
    for track in tracks where track.count > 1 {
      var d = ""
      for (i, p) in track.enumerated() {
        d += (i == 0 ? "M" : " L") + f(x(p.longitude)) + "," + f(y(p.latitude))
      }
      out += "<path d=\"\(d)\" fill=\"none\" stroke=\"#444\" stroke-width=\"1.5\"/>\n"
    }
    let colours: [TransitionType: String] = [
      .enter: "#1a9850", .exit: "#d73027", .dwell: "#4575b4",
    ]
    for (i, e) in events.enumerated() {
      let colour = colours[e.type] ?? "#000"
      let px = x(e.longitude)
      let py = y(e.latitude)
      let label = "\(e.type.rawValue.uppercased()) \(e.geofenceName ?? e.geofenceID)"
      let dy = Double(i % 3) * 12 - 12
      // Labels run right of the marker, or left of it near the right edge (about 6 px a
      // character at 11 px).
      let fitsRight = px + 7 + Double(label.count) * 6 < width - 4
      out += """
        <circle cx="\(f(px))" cy="\(f(py))" r="4.5" fill="\(colour)" stroke="#fff"/>
        <text x="\(f(fitsRight ? px + 7 : px - 7))" y="\(f(py + dy))" fill="\(colour)" \
        text-anchor="\(fitsRight ? "start" : "end")">\(escape(label))</text>

        """
    }
    // Legend.
    let counts = TransitionType.allCases.map { type in
      "\(events.filter { $0.type == type }.count) \(type.rawValue)"
    }
    out += """
      <g transform="translate(\(f(width - 250)),\(f(height - 134)))">
      <rect width="240" height="124" fill="#fff" fill-opacity="0.9" stroke="#999"/>
      <path d="M10,16 L40,16" stroke="#444" stroke-width="1.5"/>
      <text x="48" y="20">track (every fix, time order)</text>
      <ellipse cx="25" cy="36" rx="12" ry="7" fill="#7aa6d6" fill-opacity="0.18" stroke="#3b6fa8"/>
      <text x="48" y="40">geofence (circle of its radius, or polygon)</text>
      <circle cx="25" cy="56" r="4.5" fill="#1a9850"/><text x="48" y="60">enter</text>
      <circle cx="25" cy="74" r="4.5" fill="#d73027"/><text x="48" y="78">exit</text>
      <circle cx="25" cy="92" r="4.5" fill="#4575b4"/><text x="48" y="96">dwell</text>
      <text x="10" y="116" fill="#555">events: \(counts.joined(separator: ", "))</text>
      </g>
      </svg>

      """
    return out
  }

  /// `s` as XML 1.0 character data or attribute text: markup characters as entities, control
  /// characters as a space, and U+FFFE and U+FFFF (outside XML's `Char` production, yet valid
  /// in JSON, CSV and UTF-8 names) as U+FFFD, so the map is always well-formed.
  func escape(_ s: String) -> String {
    var r = String.UnicodeScalarView()
    for scalar in s.unicodeScalars {
      switch scalar {
      case "&": r.append(contentsOf: "&amp;".unicodeScalars)
      case "<": r.append(contentsOf: "&lt;".unicodeScalars)
      case ">": r.append(contentsOf: "&gt;".unicodeScalars)
      case "\"": r.append(contentsOf: "&quot;".unicodeScalars)
      case _ where scalar.value < 0x20: r.append(" ")
      case "\u{FFFE}", "\u{FFFF}": r.append("\u{FFFD}")
      default: r.append(scalar)
      }
    }
    return String(r)
  }
}
