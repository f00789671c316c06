import Foundation

/// The memory tier: the variants of each primary key, least recently used first out,
/// bounded by total cost (bytes) and by the number of keys.
///
/// A plain struct with no locking; `HostScopedCache` keeps it in a `LockedValue`. The recency
/// list is a doubly linked list threaded through an array of slots, so a hit is a
/// dictionary lookup plus O(1) relinking, with no allocation.
struct MemoryCacheTier {
    private struct Slot {
        var key: String
        var variants: [CacheEntry]
        var cost: Int
        var previous: Int
        var next: Int
    }

    let maxBytes: Int
    let maxEntries: Int
    private var slots: [Slot] = []
    private var freeSlots: [Int] = []
    private var index: [String: Int] = [:]
    /// Most recently used.
    private var head = -1
    /// Least recently used.
    private var tail = -1
    private(set) var totalCost = 0

    init(maxBytes: Int, maxEntries: Int) {
        self.maxBytes = max(0, maxBytes)
        self.maxEntries = max(0, maxEntries)
    }

    var count: Int { index.count }

    /// The variants stored for `key`, marking it most recently used.
    mutating func variants(for key: String) -> [CacheEntry]? {
        guard let position = index[key] else { return nil }
        moveToFront(position)
        return slots[position].variants
    }

    /// Whether `key` is held (without touching recency).
    func contains(_ key: String) -> Bool { index[key] != nil }

    /// Replaces the variants of `key` (removing it when empty) and evicts to respect the bounds.
    /// - Returns: How many keys were evicted.
    @discardableResult
    mutating func set(_ variants: [CacheEntry], for key: String) -> Int {
        remove(key)
        guard !variants.isEmpty else { return 0 }
        let cost = variants.reduce(0) { $0 + $1.cost }
        guard cost <= maxBytes, maxEntries > 0 else { return 0 }
        let slot = Slot(key: key, variants: variants, cost: cost, previous: -1, next: head)
        let position: Int
        if let free = freeSlots.popLast() {
            slots[free] = slot
            position = free
        } else {
            slots.append(slot)
            position = slots.count - 1
        }
        if head >= 0 { slots[head].previous = position }
        head = position
        if tail < 0 { tail = position }
        index[key] = position
        totalCost += cost
        var evicted = 0
        while (totalCost > maxBytes || index.count > maxEntries), tail >= 0, tail != position {
            remove(slots[tail].key)
            evicted += 1
        }
        return evicted
    }

    /// Drops `key`.
    mutating func remove(_ key: String) {
        guard let position = index.removeValue(forKey: key) else { return }
        unlink(position)
        totalCost -= slots[position].cost
        slots[position].variants = []
        slots[position].key = ""
        freeSlots.append(position)
    }

    /// Drops every key for which `predicate` is true.
    /// - Returns: How many keys were dropped.
    @discardableResult
    mutating func removeAll(where predicate: (String) -> Bool) -> Int {
        let doomed = index.keys.filter(predicate)
        for key in doomed { remove(key) }
        return doomed.count
    }

    /// Drops everything.
    mutating func removeAll() {
        slots = []
        freeSlots = []
        index = [:]
        head = -1
        tail = -1
        totalCost = 0
    }

    /// Keys from most to least recently used (for tests).
    var keysByRecency: [String] {
        var keys: [String] = []
        var position = head
        while position >= 0 {
            keys.append(slots[position].key)
            position = slots[position].next
        }
        return keys
    }

    private mutating func moveToFront(_ position: Int) {
        guard head != position else { return }
        unlink(position)
        slots[position].previous = -1
        slots[position].next = head
        if head >= 0 { slots[head].previous = position }
        head = position
        if tail < 0 { tail = position }
    }

    private mutating func unlink(_ position: Int) {
        let previous = slots[position].previous
        let next = slots[position].next
        if previous >= 0 { slots[previous].next = next } else if head == position { head = next }
        if next >= 0 { slots[next].previous = previous } else if tail == position { tail = previous }
        slots[position].previous = -1
        slots[position].next = -1
    }
}
