import Foundation
import Testing

@_spi(Fuzzing) @testable import Courier

@Suite struct ServerPoolTests {
    let a = try! BaseURL("https://a.example.com")
    let b = try! BaseURL("https://b.example.com")
    let c = try! BaseURL("https://c.example.com")

    @Test func switchesWhenErrorRatePassesTenPercentOverTwentyRequests() throws {
        let clock = ManualServiceClock()
        let pool = try ServerPool(servers: [a, b], clock: clock)
        let changes = LockedValue<[ServerChange]>([])
        pool.addObserver { change in changes.withLock { $0.append(change) } }
        // 18 successes and 2 failures: exactly 10%, not above it.
        for _ in 0..<18 { pool.record(.success, for: a) }
        for _ in 0..<2 { pool.record(.failure, for: a) }
        #expect(pool.current == a.url)
        // One more failure: 3 of 21 > 10%.
        let change = pool.record(.failure, for: a)
        #expect(change?.current == b.url)
        #expect(pool.current == b.url)
        #expect(pool.currentIndex == 1)
        let recorded = changes.withLock { $0 }
        #expect(recorded.count == 1)
        #expect(recorded.first?.previous == a.url)
        if case .errorRate(let rate)? = recorded.first?.reason {
            #expect(abs(rate - 3.0 / 21.0) < 1e-9)
        } else {
            Issue.record("expected an error-rate change")
        }
        #expect(pool.errorRate.count == 0)
    }

    /// Threads that switch the server at once each tell the observers outside the lock: the
    /// observers must hear the changes in the order they were made (each change starts where
    /// the one before it ended) and never two at once, or one ends on a server the pool left.
    @Test func observersHearConcurrentChangesInOrderOneAtATime() async throws {
        let pool = try ServerPool(servers: [a, b, c])
        let heard = LockedValue<[ServerChange]>([])
        let inside = LockedValue(0)
        let overlapped = LockedValue(false)
        // Weak: the pool keeps its observers, and one that kept the pool would never be freed.
        pool.addObserver { [weak pool] change in
            if inside.withLock({ count -> Int in
                count += 1
                return count
            }) > 1 {
                overlapped.withLock { $0 = true }
            }
            heard.withLock { $0.append(change) }
            // A moment in the observer, as user code takes: long enough for another change.
            for _ in 0..<200 { _ = pool?.currentIndex }
            inside.withLock { $0 -= 1 }
        }
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<4 {
                group.addTask {
                    for step in 0..<300 { try? pool.select(index: (worker + step) % 3) }
                }
            }
        }
        let changes = heard.withLock { $0 }
        #expect(!changes.isEmpty)
        #expect(!overlapped.withLock { $0 })
        let breaks = zip(changes, changes.dropFirst()).filter { $0.current != $1.previous }.count
        #expect(breaks == 0)
        #expect(changes.last?.current == pool.current)
    }

    /// NaN never switched (no rate is above it) and a negative threshold switched after every
    /// `minimumRequests` requests, all of them successes: both are refused, by either init.
    @Test(arguments: [Double.nan, -0.1, -Double.infinity])
    func aThresholdNoRateCanBeComparedWithIsAConfigurationError(_ threshold: Double) throws {
        let policy = FailoverPolicy(errorRateThreshold: threshold)
        #expect(throws: CourierError.self) {
            try ServerPool(servers: [a, b], policy: policy, clock: ManualServiceClock())
        }
        do {
            _ = try ServerPool(
                environments: [.production: [a.url, b.url]], current: .production, policy: policy)
            Issue.record("a threshold of \(threshold) was accepted")
        } catch let error as CourierError {
            #expect(error.code == .configuration)
            #expect(error.message.contains("threshold"))
        }
    }

    /// 0 (any failure), 1 and infinity (never on the rate) are thresholds a rate compares with.
    @Test func thresholdsFromZeroUpAreAccepted() throws {
        for threshold in [0, 1, Double.infinity] {
            let pool = try ServerPool(
                servers: [a, b], policy: FailoverPolicy(errorRateThreshold: threshold, minimumRequests: 2),
                clock: ManualServiceClock())
            pool.record(.success, for: a)
            pool.record(.success, for: a)
            #expect(pool.current == a.url, "threshold \(threshold) switched on successes alone")
        }
    }

    @Test func needsTheMinimumNumberOfRequests() throws {
        let pool = try ServerPool(servers: [a, b], clock: ManualServiceClock())
        for _ in 0..<19 { pool.record(.failure, for: a) }
        #expect(pool.current == a.url)
        pool.record(.failure, for: a)
        #expect(pool.current == b.url)
    }

    @Test func oldOutcomesLeaveTheWindow() throws {
        let clock = ManualServiceClock()
        let pool = try ServerPool(servers: [a, b], policy: FailoverPolicy(window: .seconds(60)), clock: clock)
        for _ in 0..<10 { pool.record(.failure, for: a) }
        clock.advance(by: .seconds(61))
        for _ in 0..<20 { pool.record(.success, for: a) }
        #expect(pool.errorRate.count == 20)
        #expect(pool.errorRate.rate == 0)
        pool.record(.failure, for: a)
        #expect(pool.current == a.url)
    }

    @Test func connectionFailureSwitchesAtOnceAndWraps() throws {
        let pool = try ServerPool(servers: [a, b, c], clock: ManualServiceClock())
        #expect(pool.record(.connectionFailure, for: a)?.reason == .connectionFailure)
        #expect(pool.current == b.url)
        pool.record(.connectionFailure, for: b)
        pool.record(.connectionFailure, for: c)
        #expect(pool.current == a.url)
    }

    @Test func consecutiveConnectionFailuresThreshold() throws {
        let pool = try ServerPool(
            servers: [a, b], policy: FailoverPolicy(consecutiveConnectionFailures: 3), clock: ManualServiceClock())
        pool.record(.connectionFailure, for: a)
        pool.record(.connectionFailure, for: a)
        pool.record(.success, for: a)
        pool.record(.connectionFailure, for: a)
        pool.record(.connectionFailure, for: a)
        #expect(pool.current == a.url)
        pool.record(.connectionFailure, for: a)
        #expect(pool.current == b.url)
    }

    @Test func outcomesOfAFormerServerAreIgnored() throws {
        let pool = try ServerPool(servers: [a, b], clock: ManualServiceClock())
        try pool.select(index: 1)
        #expect(pool.record(.connectionFailure, for: a) == nil)
        #expect(pool.current == b.url)
    }

    @Test func explicitSelectionAndEvents() async throws {
        let pool = try ServerPool(servers: [a, b, c], clock: ManualServiceClock())
        let stream = pool.changes
        try pool.select(index: 2)
        try pool.select(index: 2)  // no change, no event
        try pool.select(index: 0)
        #expect(throws: CourierError.self) { try pool.select(index: 3) }
        #expect(throws: CourierError.self) { try pool.select(index: -1) }
        var iterator = stream.makeAsyncIterator()
        let first = await iterator.next()
        let second = await iterator.next()
        #expect(first?.current == c.url)
        #expect(first?.reason == .selected)
        #expect(second?.current == a.url)
        #expect(second?.index == 0)
    }

    @Test func singleServerNeverSwitches() throws {
        let pool = try ServerPool(servers: [a], clock: ManualServiceClock())
        for _ in 0..<50 { pool.record(.connectionFailure, for: a) }
        #expect(pool.current == a.url)
        #expect(throws: CourierError.self) { try ServerPool(servers: [URL]()) }
    }

    @Test func foundationURLsAreValidatedAsBaseURLs() throws {
        let pool = try ServerPool(servers: [try #require(URL(string: "https://API.example.com/v1/"))])
        #expect(pool.current == URL(string: "https://api.example.com/v1"))
        for bad in ["ftp://example.com", "https://example.com/?key=1", "https://user:pw@example.com"] {
            let url = try #require(URL(string: bad))
            let error = try #require(throws: CourierError.self) { try ServerPool(servers: [url]) }
            #expect(error.code == .configuration)
            let environments = try #require(throws: CourierError.self) {
                try ServerPool(environments: [.production: [url]], current: .production)
            }
            #expect(environments.code == .configuration)
            let replaced = try #require(throws: CourierError.self) { try pool.setServers([url], for: .staging) }
            #expect(replaced.code == .configuration)
        }
        #expect(pool.servers == [try #require(URL(string: "https://api.example.com/v1"))])
    }

    @Test func environmentsSwitchAtRuntime() throws {
        let staging = try BaseURL("https://staging.example.com")
        let pool = try ServerPool(environments: [.production: [a, b], .staging: [staging]], current: .production)
        let seen = LockedValue<[ServerChangeReason]>([])
        let token = pool.addObserver { change in seen.withLock { $0.append(change.reason) } }
        #expect(pool.environment == .production)
        try pool.select(index: 1)
        try pool.switchEnvironment(to: .staging)
        #expect(pool.current == staging.url)
        #expect(pool.servers == [staging.url])
        #expect(pool.environment == .staging)
        #expect(throws: CourierError.self) { try pool.switchEnvironment(to: .development) }
        try pool.setServers([c], for: .development)
        try pool.switchEnvironment(to: .development)
        #expect(pool.current == c.url)
        pool.removeObserver(token)
        try pool.switchEnvironment(to: .production)
        #expect(pool.current == a.url)
        #expect(seen.withLock { $0 } == [.selected, .environment(.staging), .environment(.development)])
        #expect(throws: CourierError.self) {
            try ServerPool(environments: [.production: [a]], current: .staging)
        }
    }

    @Test func windowIsBounded() throws {
        var state = FailoverState(
            servers: [a, b], policy: FailoverPolicy(minimumRequests: 20, window: .seconds(3_600), maximumSamples: 50))
        let clock = ManualServiceClock()
        for _ in 0..<10_000 { _ = state.record(.success, server: a, now: clock.now) }
        #expect(state.errorRate(now: clock.now).count == 50)
    }

    /// Two entries of one list that are one server (the same URL, or one that differs only by
    /// the host's case, a trailing slash or the scheme's default port) are a configuration
    /// error, from every initializer and `setServers`. On the old code they were two servers:
    /// a failure "moved" the pool to the same server (observers heard it change to itself) and
    /// the call's retry went to the server that had just failed, so a backup further down the
    /// list was reached an attempt later, or not at all.
    @Test(arguments: [
        "https://a.example.com", "https://A.Example.COM/", "https://a.example.com:443",
        "https://a.example.com:443/",
    ])
    func aServerListedTwiceIsAConfigurationError(_ again: String) throws {
        let servers = [a.url, b.url, try #require(URL(string: again))]
        let direct = try #require(throws: CourierError.self) { try ServerPool(servers: servers) }
        #expect(direct.code == .configuration)
        #expect(direct.message.contains("twice"))
        let environments = try #require(throws: CourierError.self) {
            try ServerPool(environments: [.production: [c.url], .staging: servers], current: .production)
        }
        #expect(environments.code == .configuration)
        let pool = try ServerPool(servers: [c.url])
        let replaced = try #require(throws: CourierError.self) { try pool.setServers(servers, for: .staging) }
        #expect(replaced.code == .configuration)
        #expect(pool.servers == [c.url])
    }

    /// One origin under two path prefixes is two servers, an http and an https server of one
    /// host are two origins, and one server may be listed by several environments.
    @Test func oneHostUnderTwoPrefixesSchemesOrEnvironmentsIsAllowed() throws {
        let prefixed = try ServerPool(
            servers: [
                try #require(URL(string: "https://a.example.com/v1")),
                try #require(URL(string: "https://a.example.com/v2")),
                try #require(URL(string: "http://a.example.com/v1")),
                try #require(URL(string: "http://a.example.com:443/v1")),
            ])
        #expect(prefixed.servers.count == 4)
        let shared = try ServerPool(environments: [.production: [a.url, b.url], .staging: [a.url]], current: .staging)
        #expect(shared.current == a.url)
    }

    /// A window that holds no outcome (zero or negative) is a configuration error: with it the
    /// rate was never judged, and the pool never switched on errors, silently.
    @Test(arguments: [Duration.zero, .nanoseconds(-1), .seconds(-60), .seconds(Int64.min)])
    func aWindowThatHoldsNoOutcomeIsAConfigurationError(_ window: Duration) throws {
        let policy = FailoverPolicy(window: window)
        let error = try #require(throws: CourierError.self) {
            try ServerPool(servers: [a, b], policy: policy, clock: ManualServiceClock())
        }
        #expect(error.code == .configuration)
        #expect(error.message.contains("window"))
        #expect(throws: CourierError.self) {
            try ServerPool(environments: [.production: [a.url, b.url]], current: .production, policy: policy)
        }
    }

    /// Extreme counts are clamped and a huge window works: no trap, and the pool still moves.
    @Test func extremeCountsAndAHugeWindowWork() throws {
        for (minimum, connections, samples) in [(Int.min, Int.min, Int.min), (Int.max, Int.max, Int.max), (0, 0, 0)] {
            let policy = FailoverPolicy(
                errorRateThreshold: 0, minimumRequests: minimum, window: .seconds(Int64.max),
                consecutiveConnectionFailures: connections, maximumSamples: samples)
            let clock = ManualServiceClock()
            let pool = try ServerPool(servers: [a, b], policy: policy, clock: clock)
            pool.record(.success, for: a)
            clock.advance(by: .seconds(1_000_000_000))
            pool.record(.connectionFailure, for: a)
            // A minimum of 1 (clamped) and a threshold of 0: the failure moved it; Int.max never.
            #expect(pool.currentIndex == (minimum == Int.max ? 0 : 1), "\(minimum)")
            try pool.select(index: 0)
            pool.record(.failure, for: a)
            #expect(pool.errorRate.count <= 3)
        }
    }
}

extension ServerPoolTests {
    /// An outcome of a request sent in an earlier turn of the current server (the pool left it
    /// and came back) is ignored; one of this turn counts.
    @Test func anOutcomeOfAnEarlierTurnIsIgnored() throws {
        let policy = FailoverPolicy(errorRateThreshold: 0, minimumRequests: 1, consecutiveConnectionFailures: 1)
        let pool = try ServerPool(servers: [a, b], policy: policy, clock: ManualServiceClock())
        let first = pool.currentTurn
        try pool.select(index: 1)
        try pool.select(index: 0)
        #expect(pool.currentTurn.server == first.server)
        #expect(pool.currentTurn.turn != first.turn)
        #expect(pool.record(.connectionFailure, for: a, turn: first.turn) == nil)
        #expect(pool.record(.failure, for: a, turn: first.turn) == nil)
        #expect(pool.errorRate.count == 0)
        #expect(pool.record(.connectionFailure, for: a, turn: pool.currentTurn.turn)?.reason == .connectionFailure)
    }
}

extension ServerPool {
    /// Reports an outcome of a request sent in the current turn (what most tests here mean).
    @discardableResult
    fileprivate func record(_ outcome: ServerOutcome, for server: BaseURL) -> ServerChange? {
        record(outcome, for: server, turn: currentTurn.turn)
    }
}

extension FailoverState {
    /// Records an outcome of a request sent in the current turn.
    fileprivate mutating func record(_ outcome: ServerOutcome, server: BaseURL, now: ContinuousClock.Instant)
        -> ServerChange?
    {
        record(outcome, server: server, turn: turn, now: now)
    }
}
