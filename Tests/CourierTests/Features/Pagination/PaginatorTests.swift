import CourierTesting
import Foundation
import Testing

@_spi(Fuzzing) @testable import Courier

@Suite struct PaginatorTests {
    /// 0..<count served page by page.
    static func pages(_ count: Int, reportTotal: Bool = false, reportHasMore: Bool = false)
        -> @Sendable (PageRequest) async throws -> Page<Int>
    {
        { request in
            let start = request.offset ?? ((request.page ?? 1) - 1) * request.limit
            let items = Array(start..<min(count, start + request.limit))
            return Page(
                items: items, hasMore: reportHasMore ? start + items.count < count : nil,
                total: reportTotal ? count : nil)
        }
    }

    /// A page's fetch that asks its own paginator for a page waited for itself forever
    /// (`next()` awaits the load the fetch is part of): it is refused at once. The wait runs
    /// in a task of its own with a 30 s bound, so a hang fails the test instead of hanging it.
    @Test(arguments: [false, true])
    func aFetchThatCallsItsOwnPaginatorIsRefused(callsFirst: Bool) async throws {
        let own = LockedValue<Paginator<Int>?>(nil)
        let seen = LockedValue<[CourierError]>([])
        let fetch = Self.pages(45)
        let paginator = Paginator<Int>(style: .page(size: 20)) { request in
            if request.page == 1, let paginator = own.withLock({ $0 }) {
                do {
                    _ = callsFirst ? try await paginator.first() : try await paginator.next()
                } catch let error as CourierError {
                    seen.withLock { $0.append(error) }
                }
            }
            return try await fetch(request)
        }
        own.withLock { $0 = paginator }
        let done = DispatchSemaphore(value: 0)
        let walk = Task {
            defer { done.signal() }
            return try await paginator.first()
        }
        // Waited for on a thread of its own: a blocked thread of the task pool could starve the walk.
        let finished = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            Thread.detachNewThread {
                continuation.resume(returning: done.wait(timeout: TestTimeBound.deadline(seconds: 30)) == .success)
            }
        }
        #expect(finished, "the fetch waited for its own paginator")
        guard finished else { return }
        #expect(try await walk.value == Array(0..<20))
        #expect(seen.withLock { $0.map(\.code) } == [.invalidRequest])
        own.withLock { $0 = nil }
    }

    @Test func pageStyleToTheEnd() async throws {
        let requests = LockedValue<[PageRequest]>([])
        let fetch = Self.pages(45)
        let paginator = Paginator<Int>(style: .page(size: 20)) { request in
            requests.withLock { $0.append(request) }
            return try await fetch(request)
        }
        #expect(await paginator.hasMore)
        #expect(try await paginator.first() == Array(0..<20))
        #expect(await paginator.hasMore)
        #expect(try await paginator.next() == Array(20..<40))
        #expect(try await paginator.next() == Array(40..<45))
        #expect(await paginator.hasMore == false)
        #expect(try await paginator.next() == [])
        #expect(requests.withLock { $0.map(\.page) } == [1, 2, 3])
        #expect(await paginator.itemCount == 45)
    }

    @Test func exactMultipleEndsOnAnEmptyPage() async throws {
        let paginator = Paginator<Int>(style: .offset(limit: 10), fetch: Self.pages(20))
        let all = try await paginator.all()
        #expect(all == Array(0..<20))
        #expect(await paginator.hasMore == false)
    }

    @Test func totalAndHasMoreEndEarly() async throws {
        let calls = ServiceCounter()
        let fetch = Self.pages(20, reportTotal: true)
        let paginator = Paginator<Int>(style: .offset(limit: 10)) { request in
            calls.increment()
            return try await fetch(request)
        }
        #expect(try await paginator.all() == Array(0..<20))
        #expect(calls.value == 2)
        let flagged = Paginator<Int>(style: .page(first: 1, size: 10), fetch: Self.pages(20, reportHasMore: true))
        #expect(try await flagged.all().count == 20)
    }

    @Test func cursorStyle() async throws {
        let cursors = LockedValue<[String?]>([])
        let paginator = Paginator<String>(style: .cursor(limit: 2)) { request in
            cursors.withLock { $0.append(request.cursor) }
            switch request.cursor {
            case nil: return Page(items: ["a", "b"], nextCursor: "c1")
            case "c1": return Page(items: ["c", "d"], nextCursor: "c2")
            default: return Page(items: ["e"], nextCursor: nil)
            }
        }
        #expect(try await paginator.first() == ["a", "b"])
        #expect(try await paginator.next() == ["c", "d"])
        #expect(await paginator.hasMore)
        #expect(try await paginator.next() == ["e"])
        #expect(await paginator.hasMore == false)
        #expect(cursors.withLock { $0 } == [nil, "c1", "c2"])
        // first() starts over.
        #expect(try await paginator.first() == ["a", "b"])
        #expect(await paginator.hasMore)
    }

    @Test func concurrentNextNeverFetchesAPageTwice() async throws {
        let requests = LockedValue<[Int]>([])
        let fetch = Self.pages(100)
        let paginator = Paginator<Int>(style: .page(size: 10)) { request in
            requests.withLock { $0.append(request.page ?? 0) }
            await Task.yield()
            return try await fetch(request)
        }
        _ = try await paginator.first()
        let pages = try await withThrowingTaskGroup(of: [Int].self) { group in
            for _ in 0..<5 { group.addTask { try await paginator.next() } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(pages.map { $0.first ?? -1 }).count == 5)
        let fetched = requests.withLock { $0 }
        #expect(fetched.count == Set(fetched).count)
    }

    @Test func failuresPropagateAndCanBeRetried() async throws {
        let fail = LockedValue(true)
        let paginator = Paginator<Int>(style: .page(size: 10)) { request in
            if request.page == 2, fail.withLock({ $0 }) { throw CourierError(.timedOut, "slow") }
            return Page(items: Array(0..<10))
        }
        _ = try await paginator.first()
        await #expect(throws: CourierError.self) { try await paginator.next() }
        fail.withLock { $0 = false }
        #expect(try await paginator.next().count == 10)
    }

    @Test func neverEndingEndpointIsStopped() async {
        let paginator = Paginator<Int>(style: .cursor(limit: 1)) { _ in Page(items: [1], nextCursor: "same") }
        await #expect(throws: CourierError.self) { try await paginator.all(maximumPages: 50) }
    }
}
