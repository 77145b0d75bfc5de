/// Location authorization as the operating system grants it, modelled on Core Location's
/// `CLAuthorizationStatus`.
public enum AuthorizationStatus: String, CaseIterable, Sendable, Codable {
  /// The user has not been asked yet.
  case notDetermined
  /// The app may not use location services, and the user cannot change it (parental controls,
  /// device management).
  case restricted
  /// The user refused, or turned location services off.
  case denied
  /// Location only while the app is in use (foreground).
  case authorizedWhenInUse
  /// Location at any time, including background geofencing.
  case authorizedAlways
}

/// Whether the system gives full-precision or approximate locations, as Core Location's
/// `CLAccuracyAuthorization` (`fullAccuracy` / `reducedAccuracy`).
public enum AccuracyAuthorization: String, CaseIterable, Sendable, Codable {
  case full
  case reduced
}

/// Whether the app is on screen.
public enum AppState: String, CaseIterable, Sendable, Codable {
  case foreground
  case background
}

/// Everything that decides whether geofence monitoring may run.
public struct AuthorizationState: Hashable, Sendable, Codable {
  public var status: AuthorizationStatus
  public var accuracy: AccuracyAuthorization
  public var appState: AppState
  /// The user's consent to tracking inside the app (a product setting, separate from the OS
  /// permission). Off means: stop, delete queued events, ignore new ones.
  public var trackingConsent: Bool
  /// Whether the app has registered its geofences for monitoring.
  public var geofencingRegistered: Bool

  public init(
    status: AuthorizationStatus, accuracy: AccuracyAuthorization, appState: AppState,
    trackingConsent: Bool, geofencingRegistered: Bool
  ) {
    self.status = status
    self.accuracy = accuracy
    self.appState = appState
    self.trackingConsent = trackingConsent
    self.geofencingRegistered = geofencingRegistered
  }

  /// The state of a fresh install: not determined, full accuracy, foreground, no consent, not
  /// registered.
  public static let initial = AuthorizationState(
    status: .notDetermined, accuracy: .full, appState: .foreground, trackingConsent: false,
    geofencingRegistered: false)
}

/// Why monitoring may not run. One case per cause, like the diagnostics of Core Location's
/// `CLMonitor` (`CLServiceSession.Diagnostic`): every cause that applies is reported, not only
/// the first.
public enum MonitoringBlocker: String, CaseIterable, Sendable, Comparable {
  /// The user has not been asked for location permission.
  case authorizationNotDetermined
  /// The user denied location permission.
  case authorizationDenied
  /// Location is restricted on this device.
  case authorizationRestricted
  /// The grant does not cover the current app state (when-in-use only, or when-in-use in the
  /// background, or when-in-use while the policy requires always).
  case insufficientForBackground
  /// The system gives only approximate locations; geofences need precise ones.
  case accuracyLimited
  /// The user turned tracking consent off.
  case consentOff
  /// The app has not registered its geofences.
  case notRegistered

  public static func < (a: MonitoringBlocker, b: MonitoringBlocker) -> Bool {
    allCases.firstIndex(of: a) ?? 0 < allCases.firstIndex(of: b) ?? 0
  }
}

/// Which grants allow monitoring.
public struct AuthorizationPolicy: Hashable, Sendable {
  /// Also allow `authorizedWhenInUse` while the app is in the foreground. Default `false`:
  /// background geofencing needs `authorizedAlways`.
  public var allowWhenInUseInForeground: Bool

  public init(allowWhenInUseInForeground: Bool = false) {
    self.allowWhenInUseInForeground = allowWhenInUseInForeground
  }

  /// Requires `authorizedAlways` and full accuracy.
  public static let `default` = AuthorizationPolicy()
}

/// The answer to "may we monitor, and may we queue events?" for one state.
public struct AuthorizationDecision: Hashable, Sendable {
  /// Every cause that stops monitoring, in declaration order; empty when monitoring may run.
  public var blockers: [MonitoringBlocker]
  /// True when no blocker applies: fixes are evaluated.
  public var mayMonitor: Bool { blockers.isEmpty }
  /// True when new events may be queued: exactly when monitoring may run (an event is only
  /// created from an evaluated fix).
  public var mayQueueEvents: Bool { blockers.isEmpty }
  /// True when queued events must be deleted: the user withdrew tracking consent. A downgrade of
  /// the OS authorization does not delete events already collected with permission.
  public var mustDeleteQueuedEvents: Bool { blockers.contains(.consentOff) }
}

extension AuthorizationPolicy {
  /// Decides whether monitoring may run in `state`.
  ///
  /// Rules (default policy): status must be `authorizedAlways`; accuracy must be `full`
  /// (reduced accuracy turns monitoring off by itself, not through the accuracy filter);
  /// consent on; geofences registered. With `allowWhenInUseInForeground`,
  /// `authorizedWhenInUse` also passes while `appState == .foreground`.
  /// - Complexity: O(1).
  public func decide(_ state: AuthorizationState) -> AuthorizationDecision {
    var blockers: [MonitoringBlocker] = []
    switch state.status {
    case .notDetermined: blockers.append(.authorizationNotDetermined)
    case .denied: blockers.append(.authorizationDenied)
    case .restricted: blockers.append(.authorizationRestricted)
    case .authorizedWhenInUse:
      if !(allowWhenInUseInForeground && state.appState == .foreground) {
        blockers.append(.insufficientForBackground)
      }
    case .authorizedAlways: break
    }
    if state.accuracy == .reduced { blockers.append(.accuracyLimited) }
    if !state.trackingConsent { blockers.append(.consentOff) }
    if !state.geofencingRegistered { blockers.append(.notRegistered) }
    return AuthorizationDecision(blockers: blockers)
  }
}
