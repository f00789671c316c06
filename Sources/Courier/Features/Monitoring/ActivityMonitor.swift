import HTTPTypes
import Synchronization

/// Tells when calls that ask for it (`userInfo[.showsActivity] == true`) are running:
/// `true` when their number goes from 0 to 1, `false` when it goes back to 0 — the switch
/// for a loading indicator.
public final class ActivityMonitor: EventMonitor {
    private struct State {
        var active: Set<CallID> = []
        var changes = OrderedDelivery<Bool>()
    }
    private let state = LockedValue(State())
    private let onChange: @Sendable (Bool) -> Void

    /// A monitor that reports when the first activity-showing call starts and the last ends.
    /// - Parameter onChange: called with `true` at 0 → 1 and `false` at 1 → 0, in that order,
    ///   on the thread of a call that caused a change (one that is delivering changes takes the
    ///   ones made meanwhile). Calls are serialised: never two at once. It is not called under
    ///   a lock: it may read `activeCount` or start a call that shows activity.
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
        let delivers = state.withLock { state in
            let (inserted, _) = state.active.insert(event.id)
            return inserted && state.active.count == 1 && state.changes.queue(true)
        }
        if delivers { deliver() }
    }

    private func finished(_ event: CallEvent) {
        let delivers = state.withLock { state in
            state.active.remove(event.id) != nil && state.active.isEmpty && state.changes.queue(false)
        }
        if delivers { deliver() }
    }

    /// Calls `onChange` with each queued change in order, outside the lock, until none is left.
    private func deliver() {
        while let change = state.withLock({ $0.changes.next() }) { onChange(change) }
    }
}
