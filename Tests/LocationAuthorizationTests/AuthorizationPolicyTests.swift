import LocationAuthorization
import Testing

/// The whole truth table: 5 statuses × 2 accuracies × 2 app states × consent × registration ×
/// 2 policies = 160 states, each checked against the rules written out independently here.
@Test func truthTable() {
  var checked = 0
  for allowWhenInUse in [false, true] {
    let policy = AuthorizationPolicy(allowWhenInUseInForeground: allowWhenInUse)
    for status in AuthorizationStatus.allCases {
      for accuracy in AccuracyAuthorization.allCases {
        for app in AppState.allCases {
          for consent in [false, true] {
            for registered in [false, true] {
              let state = AuthorizationState(
                status: status, accuracy: accuracy, appState: app, trackingConsent: consent,
                geofencingRegistered: registered)
              let decision = policy.decide(state)
              let statusOK =
                status == .authorizedAlways
                || (status == .authorizedWhenInUse && allowWhenInUse && app == .foreground)
              let expectedMonitor = statusOK && accuracy == .full && consent && registered
              #expect(decision.mayMonitor == expectedMonitor, "\(state) \(policy)")
              #expect(decision.mayQueueEvents == expectedMonitor)
              #expect(decision.mustDeleteQueuedEvents == !consent)
              #expect(decision.blockers.contains(.accuracyLimited) == (accuracy == .reduced))
              #expect(decision.blockers.contains(.notRegistered) == !registered)
              #expect(decision.blockers == decision.blockers.sorted())
              checked += 1
            }
          }
        }
      }
    }
  }
  #expect(checked == 160)
}

@Test func everyCauseIsReportedNotOnlyTheFirst() {
  let state = AuthorizationState(
    status: .denied, accuracy: .reduced, appState: .background, trackingConsent: false,
    geofencingRegistered: false)
  #expect(
    AuthorizationPolicy.default.decide(state).blockers == [
      .authorizationDenied, .accuracyLimited, .consentOff, .notRegistered,
    ])
  var whenInUse = state
  whenInUse.status = .authorizedWhenInUse
  whenInUse.accuracy = .full
  whenInUse.trackingConsent = true
  whenInUse.geofencingRegistered = true
  #expect(AuthorizationPolicy.default.decide(whenInUse).blockers == [.insufficientForBackground])
  whenInUse.appState = .foreground
  #expect(AuthorizationPolicy.default.decide(whenInUse).blockers == [.insufficientForBackground])
  #expect(AuthorizationPolicy(allowWhenInUseInForeground: true).decide(whenInUse).mayMonitor)
}

@Test func reducedAccuracyAloneStopsMonitoring() {
  let state = AuthorizationState(
    status: .authorizedAlways, accuracy: .reduced, appState: .foreground, trackingConsent: true,
    geofencingRegistered: true)
  #expect(AuthorizationPolicy.default.decide(state).blockers == [.accuracyLimited])
  #expect(!AuthorizationPolicy.default.decide(state).mustDeleteQueuedEvents)
}
