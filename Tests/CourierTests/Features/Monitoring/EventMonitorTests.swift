import CourierTesting
import Foundation
import HTTPTypes
import Logging
import Testing

@_spi(Fuzzing) @testable import Courier

/// A swift-log handler that keeps every message, for assertions.
struct ServiceLogCapture: LogHandler {
    final class Store: Sendable {
        let lines = LockedValue<[String]>([])
    }
    let store: Store
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        store.lines.withLock { $0.append("\(event.level) \(event.message)") }
    }
}

@Suite struct EventMonitorTests {
    func event(_ path: String, userInfo: UserInfo = UserInfo(), headers: HTTPFields = [:]) -> CallEvent {
        CallEvent(
            id: .next(),
            request: HTTPRequest(
                method: .get, scheme: "https", authority: "api.example.com", path: path, headerFields: headers),
            userInfo: userInfo)
    }

    @Test func loggingMonitorRedactsSecrets() {
        let store = ServiceLogCapture.Store()
        let logger = Logger(label: "test") { _ in ServiceLogCapture(store: store) }
        let monitor = LoggingEventMonitor(logger: logger)
        let call = event(
            "/login?user=ann&access_token=SECRET1&Password=SECRET2",
            headers: [.authorization: "Bearer SECRET3", .cookie: "sid=SECRET4", .accept: "application/json"])
        monitor.willSend(call)
        monitor.didReceive(call, response: HTTPResponse(status: .ok, headerFields: [.setCookie: "sid=SECRET5"]))
        monitor.willRetry(call, after: .seconds(1), because: CourierError(.timedOut, "slow"))
        monitor.didFinish(call, result: .success(HTTPResponse(status: .ok)), metrics: CallMetrics(attempts: 2))
        monitor.didFinish(call, result: .failure(CourierError(.httpStatus, "server said no")), metrics: CallMetrics())
        let lines = store.lines.withLock { $0 }
        let text = lines.joined(separator: "\n")
        #expect(!text.contains("SECRET"))
        #expect(text.contains("user=ann"))
        #expect(text.contains("access_token=<redacted>"))
        #expect(text.contains("Authorization: <redacted>"))
        #expect(text.contains("Accept: application/json"))
        #expect(text.contains("Set-Cookie: <redacted>"))
        #expect(lines.contains { $0.hasPrefix("warning") && $0.contains("httpStatus") })
        #expect(lines.contains { $0.contains("2 attempt(s)") })
    }

    @Test func activityMonitorReportsZeroToOneAndBack() {
        let changes = LockedValue<[Bool]>([])
        let monitor = ActivityMonitor { active in changes.withLock { $0.append(active) } }
        let shows = UserInfo([.showsActivity: true])
        let a = event("/a", userInfo: shows)
        let b = event("/b", userInfo: shows)
        let quiet = event("/c")
        monitor.didStart(quiet)
        #expect(changes.withLock { $0 }.isEmpty)
        monitor.didStart(a)
        monitor.didStart(b)
        #expect(monitor.activeCount == 2)
        monitor.didFinish(a, result: .success(HTTPResponse(status: .ok)), metrics: CallMetrics())
        #expect(changes.withLock { $0 } == [true])
        monitor.didFinish(quiet, result: .success(HTTPResponse(status: .ok)), metrics: CallMetrics())
        monitor.didFinish(b, result: .failure(CourierError(.timedOut, "x")), metrics: CallMetrics())
        monitor.didFinish(b, result: .failure(CourierError(.timedOut, "x")), metrics: CallMetrics())
        #expect(changes.withLock { $0 } == [true, false])
        monitor.didStart(a)
        #expect(changes.withLock { $0 } == [true, false, true])
    }

    /// `onChange` runs outside the monitor's lock: it can read the count, and a call it starts
    /// reports its own change after the one being delivered, in order. Under the lock, this
    /// deadlocked (the lock is not re-entrant); the work runs on a thread of its own so that a
    /// deadlock fails the test instead of hanging it.
    @Test func activityMonitorsHandlerMayUseTheMonitor() {
        let changes = LockedValue<[String]>([])
        let shows = UserInfo([.showsActivity: true])
        let nested = event("/nested", userInfo: shows)
        let holder = LockedValue<ActivityMonitor?>(nil)
        let monitor = ActivityMonitor { active in
            guard let monitor = holder.withLock({ $0 }) else { return }
            changes.withLock { $0.append("\(active) \(monitor.activeCount)") }
            // The first call's end starts another call, as a spinner's handler might.
            if !active, changes.withLock({ $0.count }) == 2 { monitor.didStart(nested) }
        }
        holder.withLock { $0 = monitor }
        let done = DispatchSemaphore(value: 0)
        let first = event("/a", userInfo: shows)
        Thread.detachNewThread {
            monitor.didStart(first)
            monitor.didFinish(first, result: .success(HTTPResponse(status: .ok)), metrics: CallMetrics())
            done.signal()
        }
        #expect(
            done.wait(timeout: TestTimeBound.deadline(seconds: 30)) == .success, "the handler deadlocked on the monitor"
        )
        #expect(changes.withLock { $0 } == ["true 1", "false 0", "true 1"])
        holder.withLock { $0 = nil }
    }

    @Test func compositeAndClosureMonitorsForwardEverything() {
        let seen = LockedValue<[String]>([])
        let closure = ClosureEventMonitor(
            onStart: { _ in seen.withLock { $0.append("start") } },
            onSend: { event in seen.withLock { $0.append("send \(event.attempt)") } },
            onReceive: { _, response in seen.withLock { $0.append("receive \(response.status.code)") } },
            onRetry: { _, delay, _ in seen.withLock { $0.append("retry \(delay)") } },
            onFinish: { _, _, metrics in seen.withLock { $0.append("finish \(metrics.attempts)") } })
        let composite = CompositeEventMonitor([closure, LoggingEventMonitor()])
        var call = event("/x")
        composite.didStart(call)
        composite.willSend(call)
        composite.didReceive(call, response: HTTPResponse(status: .serviceUnavailable))
        composite.willRetry(call, after: .seconds(2), because: CourierError(.httpStatus, "503"))
        call.attempt = 2
        composite.willSend(call)
        composite.didFinish(call, result: .success(HTTPResponse(status: .ok)), metrics: CallMetrics(attempts: 2))
        #expect(
            seen.withLock { $0 } == ["start", "send 1", "receive 503", "retry 2.0 seconds", "send 2", "finish 2"])
    }

    @Test func userInfoValues() {
        var info: UserInfo = ["screen": "feed", .showsActivity: true]
        #expect(info.value("screen", as: String.self) == "feed")
        #expect(info.showsActivity)
        info[.showsActivity] = false
        #expect(!info.showsActivity)
        let merged = info.merging(["screen": "profile", "extra": 1])
        #expect(merged.value("screen", as: String.self) == "profile")
        #expect(merged.value("extra", as: Int.self) == 1)
        #expect(merged.keys.count == 3)
        #expect(UserInfo().isEmpty)
    }
}

@Suite struct ManualServiceClockTests {
    @Test func sleepersWakeWhenTimeAdvancesPastTheirDeadline() async throws {
        let clock = ManualServiceClock()
        let start = clock.now
        let wall = clock.wallTime
        let woke = ServiceCounter()
        let short = Task {
            try await clock.sleep(for: .seconds(1))
            woke.increment()
        }
        let long = Task {
            try await clock.sleep(for: .seconds(10))
            woke.increment()
        }
        await clock.waitForSleepers(2)
        clock.advance(by: .seconds(1))
        try await short.value
        #expect(woke.value == 1)
        #expect(clock.pendingSleepers == 1)
        long.cancel()
        await #expect(throws: CancellationError.self) { try await long.value }
        #expect(clock.now - start == .seconds(1))
        #expect(clock.wallTime.timeIntervalSince(wall) == 1)
        try await clock.sleep(for: .zero)
    }

    @Test func autoAdvanceRecordsAndMovesTime() async throws {
        let clock = ManualServiceClock(autoAdvance: true)
        let start = clock.now
        try await clock.sleep(for: .milliseconds(300))
        try await clock.sleep(for: .seconds(2))
        #expect(clock.sleeps == [.milliseconds(300), .seconds(2)])
        #expect(clock.now - start == .milliseconds(2_300))
    }
}
