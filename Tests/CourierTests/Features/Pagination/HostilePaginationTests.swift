import CourierTesting
import Foundation
import Testing

@testable import Courier

/// Pagination against a server that loops and a caller who starts at the last page number.
@Suite struct HostilePaginationTests {
    struct ItemsPage: Decodable, Sendable {
        var items: [Int]
        var next: String?
    }

    /// On the old code the next page number was `Int.max + 1`: the process trapped after the
    /// first full page.
    @Test(arguments: [Int.max, Int.max - 1])
    func aWalkStartingNearIntMaxEndsAtItInsteadOfTrapping(_ first: Int) async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/items") { _ in .json(["items": [1, 2]]) }
        let service = try ServiceFixture.service(server)
        let pages = service.paginator("items", style: .page(first: first, size: 2), as: ItemsPage.self) {
            Page(items: $0.items)
        }
        #expect(try await pages.all() == Array(repeating: [1, 2], count: Int.max - first + 1).flatMap { $0 })
        #expect(await pages.hasMore == false)
        #expect(try await pages.next() == [])
        #expect(
            server.recordedRequests(path: "/items").map { $0.queryValue("page") } == (first...Int.max).map { "\($0)" })
    }

    /// A `first()` while `all()` waits for a page starts the walk over; the `all()` fails with
    /// `CourierError.cancelled` (it failed with a raw `CancellationError`, which a caller
    /// handling `CourierError` did not expect from a walk).
    @Test func aWalkStartedOverWhileAllWaitsEndsAllWithACourierError() async throws {
        let gate = ServiceGate()
        let secondPages = ServiceCounter()
        let pages = Paginator<Int>(style: .page(first: 1, size: 2)) { request in
            if request.page == 1 { return Page(items: [1, 2]) }
            secondPages.increment()
            await gate.wait()  // not cancellable: the page arrives after the walk started over
            return Page(items: [3, 4])
        }
        let walk = Task { try await pages.all() }
        while secondPages.value == 0 { await Task.yield() }
        #expect(try await pages.first() == [1, 2])
        gate.open()
        let result = await walk.result
        #expect(throws: CourierError.self) { try result.get() }
        if case .failure(let error as CourierError) = result { #expect(error.code == .cancelled) }
    }

    /// A page size below 1 was sent as it was: a server that ignores it answered full pages,
    /// never shorter than the size, and the walk went on until `maximumPages`.
    @Test(arguments: [0, -1, Int.min])
    func aPageSizeBelowOneIsAConfigurationError(_ size: Int) async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/items") { _ in .json(["items": [1, 2]]) }
        let service = try ServiceFixture.service(server)
        for style in [PaginationStyle.page(size: size), .offset(limit: size), .cursor(limit: size)] {
            let pages = service.paginator("items", style: style, as: ItemsPage.self) { Page(items: $0.items) }
            let error = await courierError { _ = try await pages.all(maximumPages: 3) }
            #expect(error?.code == .configuration)
        }
        #expect(server.count("/items") == 0)
    }

    /// On the old code a cursor cycle (a → b → a) was fetched round and round until
    /// `maximumPages`, the same items appended each time.
    @Test func aCursorThatComesBackEndsTheWalkWithAnError() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/feed") { request in
            switch request.queryValue("cursor") {
            case nil: return .json(["items": [1], "next": "a"])
            case "a": return .json(["items": [2], "next": "b"])
            default: return .json(["items": [3], "next": "a"])
            }
        }
        let service = try ServiceFixture.service(server)
        let pages = service.paginator("feed", style: .cursor(limit: 1), as: ItemsPage.self) {
            Page(items: $0.items, nextCursor: $0.next)
        }
        let error = await courierError { _ = try await pages.all(maximumPages: 100) }
        #expect(error?.code == .invalidResponse)
        #expect(error?.message.contains("loop") == true, "\(String(describing: error))")
        #expect(server.recordedRequests(path: "/feed").map { $0.queryValue("cursor") } == [nil, "a", "b"])
        // Starting over forgets the cursors seen.
        #expect(try await pages.first() == [1])
        #expect(try await pages.next() == [2])
    }

    /// A limit below one page still fetched the first page (and returned it when it was the
    /// only one) before the limit was looked at.
    @Test(arguments: [0, -1, Int.min])
    func aPageLimitBelowOneIsAConfigurationErrorBeforeAnyRequest(_ maximumPages: Int) async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/items") { _ in .json(["items": [1]]) }
        let service = try ServiceFixture.service(server)
        let pages = service.paginator("items", style: .page(size: 2), as: ItemsPage.self) { Page(items: $0.items) }
        let error = await courierError { _ = try await pages.all(maximumPages: maximumPages) }
        #expect(error?.code == .configuration)
        #expect(server.count("/items") == 0)
        #expect(try await pages.all(maximumPages: 1) == [1])
    }
}
