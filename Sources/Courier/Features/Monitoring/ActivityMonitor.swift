import HTTPTypes
import Synchronization

/// Tells when calls that ask for it (`userInfo[.showsActivity] == true`) are running:
/// `true` when their number goes from 0 to 1, `false` when it goes back to 0 — the switch
/// for a loading indicator.
public final class ActivityMonitor: EventMonitor {
    private struct State {
        var active: Set<CallID> = []
    }
    private let state = LockedValue(State())
    private let onChange: @Sendable (Bool) -> Void

    /// A monitor that reports when the first activity-showing call starts and the last ends.
    /// - Parameter onChange: called with `true` at 0 → 1 and `false` at 1 → 0, on the thread
    ///   of the call that caused it. Calls are serialised: never two at once.
    public init(onChange: @escaping @Sendable (Bool) -> Void) {
        self.onChange = onChange
    }

    /// The number of active calls that asked for activity.
    public var activeCount: Int { state.withLock { $0.active.count } }

    /// Counts the call in on `.started` and out when it ends.
    public func handle(_ event: MonitorEvent) {
        switch event {
        case .started(let call): started(call)
        case .finished(let call, _, _): finished(call)
        default: break
        }
    }

    private func started(_ event: CallEvent) {
        guard event.userInfo.showsActivity else { return }
        state.withLock { state in
            let (inserted, _) = state.active.insert(event.id)
            // Called under the lock so a quick 0→1→0 is never reported in the wrong order.
            if inserted && state.active.count == 1 { onChange(true) }
        }
    }

    private func finished(_ event: CallEvent) {
        state.withLock { state in
            if state.active.remove(event.id) != nil && state.active.isEmpty { onChange(false) }
        }
    }
}
