/// Changes made under a lock, to be handed to user code outside it, in the order they were made.
///
/// Kept in the owner's locked state. The thread that queues a change when no other is
/// delivering delivers it, and then the changes other threads queue meanwhile: user code is
/// never called under the lock (it may call back into the owner), never twice at once, and
/// never out of order (two threads that each made a change would otherwise race to tell it).
struct OrderedDelivery<Change> {
    /// Changes not yet delivered, oldest first.
    private var pending: [Change] = []
    /// Whether a thread is delivering `pending`: the others leave theirs to it.
    private var delivering = false

    /// Queues a change (under the owner's lock).
    /// - Returns: whether this thread delivers it (no other is delivering): it then calls
    ///   `next()` until it returns nil, outside the lock.
    mutating func queue(_ change: Change) -> Bool {
        pending.append(change)
        guard !delivering else { return false }
        delivering = true
        return true
    }

    /// The next change to deliver (under the owner's lock), or nil when none is left: the
    /// delivering thread is done.
    mutating func next() -> Change? {
        guard !pending.isEmpty else {
            delivering = false
            return nil
        }
        return pending.removeFirst()
    }
}
