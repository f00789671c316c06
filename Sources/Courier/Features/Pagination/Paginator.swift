/// Which page to fetch next.
public struct PageRequest: Sendable, Hashable {
    /// The page number (page style; starts at the style's first page).
    public var page: Int?
    /// The index of the first item (offset style).
    public var offset: Int?
    /// The page size.
    public var limit: Int
    /// The cursor the previous page returned (cursor style; nil for the first page).
    public var cursor: String?
}

/// One page of results as the endpoint returned it.
public struct Page<Item: Sendable>: Sendable {
    /// The items of this page, in the server's order.
    public var items: [Item]
    /// The cursor of the next page (cursor style); nil when there is none.
    public var nextCursor: String?
    /// What the server says about a next page, when it says anything.
    public var hasMore: Bool?
    /// The total number of items, when the server reports it.
    public var total: Int?

    /// A page as your fetch closure decoded it; leave out what the server does not report.
    public init(items: [Item], nextCursor: String? = nil, hasMore: Bool? = nil, total: Int? = nil) {
        self.items = items
        self.nextCursor = nextCursor
        self.hasMore = hasMore
        self.total = total
    }
}

/// How pages are addressed.
public enum PaginationStyle: Sendable, Hashable {
    /// `?page=1&per_page=20`.
    case page(first: Int = 1, size: Int)
    /// `?offset=0&limit=20`.
    case offset(limit: Int)
    /// `?cursor=…&limit=20`; the first page has no cursor.
    case cursor(limit: Int)
}

/// Walks a paginated endpoint: `first()`, then `next()` while `hasMore`.
///
/// The end is known from, in order: a missing next cursor (cursor style), the page's
/// `hasMore`, its `total`, or a page shorter than the page size (an empty page ends too), and
/// after page number `Int.max`. A next cursor already fetched (pages that loop) is an error.
/// Concurrent `next()` calls are served one after another, never fetching a page twice.
public actor Paginator<Item: Sendable> {
    /// Fetches the page a ``PageRequest`` describes.
    public typealias Fetch = @Sendable (PageRequest) async throws -> Page<Item>

    private let style: PaginationStyle
    private let fetch: Fetch
    private var nextRequest: PageRequest?
    private var started = false
    private var loading: Task<[Item], any Error>?
    private var generation: UInt64 = 0
    private var loadedCount = 0
    /// The hashes of the cursors fetched since `first()`: a next cursor among them means the
    /// server's pages loop. Hashes, not the cursors, so a server's long cursors are not kept;
    /// a false match needs a 64-bit collision.
    private var fetchedCursors: Set<Int> = []

    /// A paginator that has fetched nothing yet.
    /// - Parameters:
    ///   - style: page, offset or cursor.
    ///   - fetch: loads one page.
    public init(style: PaginationStyle, fetch: @escaping Fetch) {
        self.style = style
        self.fetch = fetch
    }

    /// Whether another page may exist (true before the first fetch).
    public var hasMore: Bool { !started || nextRequest != nil }

    /// The number of items loaded since `first()`.
    var itemCount: Int { loadedCount }

    /// Loads the first page, starting over.
    /// - Returns: its items.
    /// - Throws: `CourierError.invalidRequest` when called from a page's own fetch.
    public func first() async throws -> [Item] {
        try refuseFromOwnFetch("first()")
        loading?.cancel()
        loading = nil
        generation &+= 1
        started = false
        loadedCount = 0
        fetchedCursors = []
        return try await load(firstRequest)
    }

    /// Loads the page after the last one loaded (the first page if none was).
    /// - Returns: its items; empty when there are no more pages.
    /// - Throws: `CourierError.invalidResponse` when the next cursor is one already fetched;
    ///   `.invalidRequest` when called from a page's own fetch (it would wait for itself).
    public func next() async throws -> [Item] {
        try refuseFromOwnFetch("next()")
        while let current = loading {
            _ = try? await current.value
            // Whoever resumes first retires the finished load, so no one spins on it.
            if loading == current { loading = nil }
        }
        guard started else { return try await load(firstRequest) }
        guard let request = nextRequest else { return [] }
        if let cursor = request.cursor, fetchedCursors.contains(cursor.hashValue) {
            throw CourierError(.invalidResponse, "the endpoint's next cursor is one already fetched: its pages loop")
        }
        return try await load(request)
    }

    /// Loads every remaining page.
    /// - Parameter maximumPages: a guard against endpoints that never end (at least 1).
    /// - Returns: all items from the first page on.
    /// - Throws: `CourierError.configuration`, before any request, when `maximumPages` is
    ///   below 1; `.invalidResponse` when the walk has not ended after `maximumPages` pages.
    public func all(maximumPages: Int = 10_000) async throws -> [Item] {
        guard maximumPages >= 1 else {
            throw CourierError(.configuration, "the page limit must be at least 1 (got \(maximumPages))")
        }
        var items = try await first()
        var pages = 1
        while hasMore {
            guard pages < maximumPages else {
                throw CourierError(.invalidResponse, "pagination did not end after \(maximumPages) pages")
            }
            items += try await next()
            pages += 1
        }
        return items
    }

    /// A page's fetch that asks its own paginator for a page would wait for itself (`next()`:
    /// for the load it is part of) or fetch again without end (`first()`): refused at once, from
    /// the fetch and from any task it starts (they inherit its task-local values; a prefetch of
    /// the next page belongs after the fetch, not in it).
    /// - Throws: `CourierError.invalidRequest`.
    private func refuseFromOwnFetch(_ method: String) throws(CourierError) {
        guard PaginatorFetch.paginator == ObjectIdentifier(self) else { return }
        throw CourierError(
            .invalidRequest, "a page's fetch called \(method) on its own paginator: it would wait for itself")
    }

    private var firstRequest: PageRequest {
        switch style {
        case .page(let first, let size): PageRequest(page: first, offset: nil, limit: size, cursor: nil)
        case .offset(let limit): PageRequest(page: nil, offset: 0, limit: limit, cursor: nil)
        case .cursor(let limit): PageRequest(page: nil, offset: nil, limit: limit, cursor: nil)
        }
    }

    private func load(_ request: PageRequest) async throws -> [Item] {
        // A size below 1 asks for no page at all: a server that ignores it sent full pages,
        // never "shorter than the size", until `maximumPages`.
        guard request.limit >= 1 else {
            throw CourierError(.configuration, "the page size must be at least 1 (got \(request.limit))")
        }
        let generation = self.generation
        // The task updates the paginator's state itself, before anyone awaiting it resumes.
        let task = Task { try await self.fetchAndApply(request, generation: generation) }
        loading = task
        defer { if loading == task { loading = nil } }
        return try await withTaskCancellationHandler {
            try await task.value
        } onCancel: {
            task.cancel()
        }
    }

    private func fetchAndApply(_ request: PageRequest, generation: UInt64) async throws -> [Item] {
        let page = try await PaginatorFetch.$paginator.withValue(ObjectIdentifier(self)) { try await fetch(request) }
        // A `first()` while this page was loading started over: this page is not part of it,
        // and the walk that asked for it ends with a `CourierError` like any other call.
        guard generation == self.generation else {
            throw CourierError(.cancelled, "first() started the walk over while this page was loading")
        }
        started = true
        if let cursor = request.cursor { fetchedCursors.insert(cursor.hashValue) }
        loadedCount += page.items.count
        nextRequest = following(request, page: page)
        return page.items
    }

    private func following(_ request: PageRequest, page: Page<Item>) -> PageRequest? {
        if case .cursor = style {
            guard let cursor = page.nextCursor, !cursor.isEmpty, page.hasMore != false else { return nil }
            return PageRequest(page: nil, offset: nil, limit: request.limit, cursor: cursor)
        }
        if page.items.isEmpty { return nil }
        if let hasMore = page.hasMore {
            if !hasMore { return nil }
        } else if let total = page.total {
            if loadedCount >= total { return nil }
        } else if page.items.count < request.limit {
            return nil
        }
        var next = request
        // A page after `Int.max` cannot be asked for: the walk ends there.
        if let number = request.page {
            guard number < Int.max else { return nil }
            next.page = number + 1
        }
        next.offset = request.offset.map { $0 + page.items.count }
        return next
    }
}

/// The paginator whose page the current task is fetching (a generic type has no static
/// stored property of its own).
enum PaginatorFetch {
    @TaskLocal static var paginator: ObjectIdentifier?
}
