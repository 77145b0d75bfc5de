import EventOutbox
import GeofenceGeometry
import GeofenceTransitions

/// The monitored geofences, their index, and each region's **lifetime**: a string that names
/// one life of a geofence id (a geofence deleted and created again with the same id is a new
/// life). The lifetime is part of every event id, so events of two lives never collide.
///
/// This is the seam between where regions come from and the pipeline: files today
/// (``init(geofences:)``), the synced set from `GeofenceSync` later (with the version at which
/// each geofence was created as its lifetime, through ``init(geofences:lifetimes:)``).
public struct MonitoredRegions: Sendable {
  public let geofences: [Geofence]
  public let regionSet: RegionSet
  /// `lifetimes[i]` for `geofences[i]`.
  public let lifetimes: [String]

  /// Regions with explicit lifetimes.
  /// - Precondition: `lifetimes.count == geofences.count`.
  public init(geofences: [Geofence], lifetimes: [String]) {
    precondition(lifetimes.count == geofences.count)
    self.geofences = geofences
    self.regionSet = RegionSet(geofences: geofences)
    self.lifetimes = lifetimes
  }

  /// Regions from definition files: the lifetime is derived from the geometry (centre and
  /// radius, hashed with ``OutboxEventID``), so loading the same file again gives the same
  /// lifetimes and moving or resizing a geofence starts a new one.
  public init(geofences: [Geofence]) {
    self.init(
      geofences: geofences,
      lifetimes: geofences.map {
        OutboxEventID.derive(
          [
            String($0.region.center.latitude), String($0.region.center.longitude),
            String($0.region.radiusMeters),
          ], prefix: "geo-")
      })
  }
}
