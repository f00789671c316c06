import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

@Suite struct RequestIntervalTests {
    @Test func dropsASecondTapWithinTheInterval() async throws {
        let clock = ManualServiceClock()
        let gate = RequestIntervalGate(clock: clock)
        try await gate.admit(key: "POST /like", rule: .drop(.seconds(2)))
        await #expect(throws: CourierError.self) { try await gate.admit(key: "POST /like", rule: .drop(.seconds(2))) }
        do {
            try await gate.admit(key: "POST /like", rule: .drop(.seconds(2)))
        } catch let error as CourierError {
            #expect(error.code == .throttled)
        }
        // Another endpoint is not affected.
        try await gate.admit(key: "POST /follow", rule: .drop(.seconds(2)))
        clock.advance(by: .seconds(2))
        try await gate.admit(key: "POST /like", rule: .drop(.seconds(2)))
    }

    @Test func droppedCallDoesNotExtendTheInterval() async throws {
        let clock = ManualServiceClock()
        let gate = RequestIntervalGate(clock: clock)
        try await gate.admit(key: "k", rule: .drop(.seconds(2)))
        clock.advance(by: .seconds(1))
        await #expect(throws: CourierError.self) { try await gate.admit(key: "k", rule: .drop(.seconds(2))) }
        clock.advance(by: .seconds(1))
        try await gate.admit(key: "k", rule: .drop(.seconds(2)))
    }

    @Test func delayedCallsQueueBehindEachOther() async throws {
        let clock = ManualServiceClock(autoAdvance: true)
        let gate = RequestIntervalGate(clock: clock)
        try await gate.admit(key: "k", rule: .delay(.seconds(1)))
        try await gate.admit(key: "k", rule: .delay(.seconds(1)))
        #expect(clock.sleeps == [.seconds(1)])
        try await gate.admit(key: "k", rule: .delay(.seconds(1)))
        #expect(clock.sleeps == [.seconds(1), .seconds(1)])
    }

    @Test func concurrentDelayedCallsGetSuccessiveSlots() async throws {
        let clock = ManualServiceClock()
        let gate = RequestIntervalGate(clock: clock)
        try await gate.admit(key: "k", rule: .delay(.seconds(1)))
        async let second: Void = gate.admit(key: "k", rule: .delay(.seconds(1)))
        async let third: Void = gate.admit(key: "k", rule: .delay(.seconds(1)))
        await clock.waitForSleepers(2)
        #expect(clock.sleeps.sorted() == [.seconds(1), .seconds(2)])
        clock.advance(by: .seconds(2))
        _ = try await (second, third)
    }

    @Test func tableIsPurgedAndBounded() async throws {
        let clock = ManualServiceClock()
        let gate = RequestIntervalGate(capacity: 100, clock: clock)
        for index in 0..<1_000 {
            try await gate.admit(key: "GET /items/\(index)", rule: .drop(.seconds(1)))
        }
        #expect(gate.trackedEndpoints <= 100)
        clock.advance(by: .seconds(5))
        try await gate.admit(key: "GET /new", rule: .drop(.seconds(1)))
        try await gate.admit(key: "GET /new2", rule: .drop(.seconds(1)))
        // The full table was purged of expired entries when the next call came.
        var table = RequestIntervalTable(capacity: 10)
        let now = clock.now
        for index in 0..<10 { _ = table.admit(key: "\(index)", rule: .drop(.seconds(1)), now: now) }
        #expect(table.count == 10)
        _ = table.admit(key: "late", rule: .drop(.seconds(1)), now: now + .seconds(2))
        #expect(table.count == 1)
    }

    @Test func keyIsMethodAndURL() {
        let get = HTTPRequest(method: .get, scheme: "https", authority: "a.example", path: "/like?id=1")
        let post = HTTPRequest(method: .post, scheme: "https", authority: "a.example", path: "/like?id=1")
        #expect(RequestIntervalGate.key(for: get) == "GET https://a.example/like?id=1")
        #expect(RequestIntervalGate.key(for: get) != RequestIntervalGate.key(for: post))
    }

    @Test func cancellationWhileDelayed() async throws {
        let clock = ManualServiceClock()
        let gate = RequestIntervalGate(clock: clock)
        try await gate.admit(key: "k", rule: .delay(.seconds(10)))
        let task = Task { try await gate.admit(key: "k", rule: .delay(.seconds(10))) }
        await clock.waitForSleepers(1)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        // The cancelled call's slot is given back: a call when the first call's interval has
        // passed goes at once (before, it met the cancelled call's booking and was dropped).
        clock.advance(by: .seconds(10))
        try await gate.admit(key: "k", rule: .drop(.seconds(10)))
    }

    /// A slot is given back only when no call booked after it: the calls behind keep their
    /// order and spacing.
    @Test func aCancelledSlotWithCallsBehindItIsKept() {
        var table = RequestIntervalTable(capacity: 10)
        let start = ContinuousClock.now
        let rule = RequestInterval.delay(.seconds(1))
        #expect(table.admit(key: "k", rule: rule, now: start) == .proceed)
        #expect(table.admit(key: "k", rule: rule, now: start) == .wait(.seconds(1)))
        #expect(table.admit(key: "k", rule: rule, now: start) == .wait(.seconds(2)))
        table.release(key: "k", slot: start + .seconds(1), interval: .seconds(1))
        #expect(table.admit(key: "k", rule: rule, now: start) == .wait(.seconds(3)))
        table.release(key: "k", slot: start + .seconds(3), interval: .seconds(1))
        #expect(table.admit(key: "k", rule: rule, now: start) == .wait(.seconds(3)))
    }

    /// 1,025 users each liking once within two seconds, after one of them ordered (an interval of
    /// a minute): the table forgot the oldest entry, the order, and a second order went
    /// through at once. A full table forgets the entry whose interval ends first, and holds far
    /// more than 1,024 live ones.
    @Test func manyLiveEndpointsDoNotFreeAnotherFromItsInterval() async throws {
        let clock = ManualServiceClock()
        let gate = RequestIntervalGate(clock: clock)
        try await gate.admit(key: "POST /order\nuser: 0", rule: .drop(.seconds(60)))
        for user in 1...1_024 {
            clock.advance(by: .milliseconds(1))
            try await gate.admit(key: "POST /like\nuser: \(user)", rule: .drop(.seconds(2)))
        }
        #expect(gate.trackedEndpoints == 1_025)
        await #expect(throws: CourierError.self) {
            try await gate.admit(key: "POST /order\nuser: 0", rule: .drop(.seconds(60)))
        }
        await #expect(throws: CourierError.self) {
            try await gate.admit(key: "POST /like\nuser: 1", rule: .drop(.seconds(2)))
        }
    }

    /// At its bound, a table of live entries forgets the one whose interval ends first (not the
    /// one sent first, which may hold the longest interval); expired entries go before any.
    @Test func aFullTableForgetsTheIntervalThatEndsFirst() {
        var table = RequestIntervalTable(capacity: 4)
        let start = ContinuousClock.now
        #expect(table.admit(key: "order", rule: .drop(.seconds(60)), now: start) == .proceed)
        for index in 0..<3 {
            #expect(table.admit(key: "like \(index)", rule: .drop(.seconds(2)), now: start + .seconds(1)) == .proceed)
        }
        #expect(table.admit(key: "late", rule: .drop(.seconds(2)), now: start + .seconds(2)) == .proceed)
        #expect(table.count == 4)
        #expect(table.admit(key: "order", rule: .drop(.seconds(60)), now: start + .seconds(2)) != .proceed)
        #expect(table.admit(key: "late", rule: .drop(.seconds(2)), now: start + .seconds(2)) != .proceed)
        // The likes' intervals have passed: purged, the order and "late" kept.
        #expect(table.admit(key: "next", rule: .drop(.seconds(2)), now: start + .milliseconds(3_500)) == .proceed)
        #expect(table.count == 3)
        #expect(table.admit(key: "order", rule: .drop(.seconds(60)), now: start + .seconds(4)) != .proceed)
    }

    /// Many endpoints at once: the table stays within its bound.
    @Test func theTableStaysBoundedUnderManyLiveEndpoints() async throws {
        let clock = ManualServiceClock()
        let gate = RequestIntervalGate(capacity: 2_000, clock: clock)
        for index in 0..<5_000 {
            try await gate.admit(key: "GET /items/\(index)", rule: .drop(.seconds(60)))
        }
        #expect(gate.trackedEndpoints == 2_000)
        await #expect(throws: CourierError.self) {
            try await gate.admit(key: "GET /items/4999", rule: .drop(.seconds(60)))
        }
    }

    /// A full table is always at its capacity, the size at which it purges: it scanned and
    /// copied all of its entries on every call (a call to an endpoint it already held too),
    /// under the gate's lock, though none had expired. It purges once an entry's interval may
    /// have ended.
    @Test func aFullTableOfLiveEntriesIsNotPurgedOnEveryCall() {
        var table = RequestIntervalTable(capacity: 2_000)
        let start = ContinuousClock.now
        for index in 0..<2_000 {
            #expect(table.admit(key: "GET /items/\(index)", rule: .drop(.seconds(60)), now: start) == .proceed)
        }
        let purges = table.purges
        for index in 2_000..<2_500 {
            let now = start + .seconds(1)
            #expect(table.admit(key: "GET /items/\(index)", rule: .drop(.seconds(60)), now: now) == .proceed)
            #expect(table.admit(key: "GET /items/\(index)", rule: .drop(.seconds(60)), now: now) != .proceed)
        }
        #expect(table.count == 2_000)
        #expect(table.purges == purges, "\(table.purges - purges) purges of a table with nothing expired")
        // Once the intervals have passed, the next call purges them all.
        #expect(table.admit(key: "GET /next", rule: .drop(.seconds(60)), now: start + .seconds(62)) == .proceed)
        #expect(table.purges == purges + 1)
        #expect(table.count == 1)
    }
}
