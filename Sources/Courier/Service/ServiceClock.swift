import Foundation
import Synchronization

/// The source of time for the service layer: retry back-off, request intervals, failover
/// windows and refresh-storm limits all read it, so tests can drive time by hand.
package protocol ServiceClock: Sendable {
    /// The current monotonic instant.
    var now: ContinuousClock.Instant { get }
    /// The current wall-clock time (used to read `Retry-After` HTTP dates).
    var wallTime: Date { get }
    /// Suspends the caller for `duration`.
    /// - Throws: `CancellationError` when the task is cancelled while waiting.
    func sleep(for duration: Duration) async throws
}

/// The real clock: `ContinuousClock` and `Date()`.
package struct SystemServiceClock: ServiceClock {
    package init() {}
    package var now: ContinuousClock.Instant { ContinuousClock.now }
    package var wallTime: Date { Date() }
    package func sleep(for duration: Duration) async throws {
        guard duration > .zero else { return }
        // A deadline past the runtime's 64-bit nanoseconds traps inside `Task.sleep`.
        try await Task.sleep(for: duration.clamped(to: ConfigurationBounds.maximumWait))
    }
}

extension ServiceClock where Self == SystemServiceClock {
    /// The real clock.
    package static var system: SystemServiceClock { SystemServiceClock() }
}

/// A clock that moves only when told to, for tests that must not sleep.
///
/// With `autoAdvance` on, every `sleep(for:)` moves time forward by the requested duration
/// and returns at once; otherwise sleepers wait until `advance(by:)` passes their deadline.
/// Every requested sleep is recorded in `sleeps`.
final class ManualServiceClock: ServiceClock {
    private struct Sleeper {
        let id: UInt64
        let deadline: ContinuousClock.Instant
        let continuation: CheckedContinuation<Void, any Error>
    }
    private struct State {
        var offset: Duration = .zero
        var sleeps: [Duration] = []
        var sleepers: [Sleeper] = []
        var nextID: UInt64 = 0
        var sleeperWatchers: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let origin: ContinuousClock.Instant
    private let wallOrigin: Date
    private let autoAdvance: Bool
    private let state = LockedValue(State())

    /// Creates a clock standing at `wallTime`.
    /// - Parameters:
    ///   - wallTime: the wall-clock time at the start.
    ///   - autoAdvance: whether a sleep moves time forward by itself.
    init(wallTime: Date = Date(timeIntervalSince1970: 1_800_000_000), autoAdvance: Bool = false) {
        self.origin = ContinuousClock.now
        self.wallOrigin = wallTime
        self.autoAdvance = autoAdvance
    }

    var now: ContinuousClock.Instant { origin + state.withLock { $0.offset } }

    var wallTime: Date {
        let offset = state.withLock { $0.offset }
        return wallOrigin.addingTimeInterval(offset.seconds)
    }

    /// Every duration passed to `sleep(for:)`, in order.
    var sleeps: [Duration] { state.withLock { $0.sleeps } }

    /// The number of callers suspended in `sleep(for:)`.
    var pendingSleepers: Int { state.withLock { $0.sleepers.count } }

    func sleep(for duration: Duration) async throws {
        try Task.checkCancellation()
        if autoAdvance {
            state.withLock { $0.sleeps.append(duration) }
            advance(by: duration.clamped(to: ConfigurationBounds.maximumWait))
            return
        }
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            defer { ThreadSanitizer.continuationReturned() }
            return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (resumeNow, watchers) = state.withLock { state -> (Bool, [CheckedContinuation<Void, Never>]) in
                    state.sleeps.append(duration)
                    if duration <= .zero { return (true, []) }
                    state.sleepers.append(
                        Sleeper(id: id, deadline: origin + state.offset + duration, continuation: continuation))
                    return (false, Self.takeWatchers(&state))
                }
                watchers.forEach { $0.resume() }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                return state.sleepers.remove(at: index)
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves time forward and wakes every sleeper whose deadline has passed.
    /// - Parameter duration: how far to move.
    func advance(by duration: Duration) {
        let due = state.withLock { state -> [Sleeper] in
            state.offset += duration
            let now = origin + state.offset
            let due = state.sleepers.filter { $0.deadline <= now }
            state.sleepers.removeAll { $0.deadline <= now }
            return due
        }
        due.forEach { $0.continuation.resume() }
    }

    /// Waits until at least `count` callers are suspended in `sleep(for:)`.
    /// - Parameter count: the number of sleepers to wait for.
    func waitForSleepers(_ count: Int) async {
        defer { ThreadSanitizer.continuationReturned() }
        return await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state -> Bool in
                if state.sleepers.count >= count { return true }
                state.sleeperWatchers.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    private static func takeWatchers(_ state: inout State) -> [CheckedContinuation<Void, Never>] {
        let count = state.sleepers.count
        let ready = state.sleeperWatchers.filter { $0.count <= count }.map(\.continuation)
        state.sleeperWatchers.removeAll { $0.count <= count }
        return ready
    }
}

extension Duration {
    /// The duration in seconds, as a `Double` (as `timeInterval`: never through `components`,
    /// which trap past `Int64.max` seconds).
    var seconds: Double { timeInterval }

    /// A duration from seconds, clamped to be finite and not negative.
    static func clampedSeconds(_ value: Double) -> Duration {
        guard value.isFinite, value > 0 else { return .zero }
        return .nanoseconds(Int64(min(value, 1e9) * 1e9))
    }
}
