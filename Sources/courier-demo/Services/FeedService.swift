import Courier
import Foundation

/// The home feed: pages of posts, trending, search.
struct FeedService: APIService {
    let core: ServiceCore

    enum Failure: Error, Equatable {
        case signedOut
        case tooFast
        case unavailable
        case offline
        case unexpected(String)
    }

    /// Walks the feed with a cursor, `pageSize` posts at a time.
    func pages(pageSize: Int) -> Paginator<Post> {
        paginator("feed", style: .cursor(limit: pageSize), as: FeedPage.self) { page in
            Page(items: page.posts, nextCursor: page.nextCursor)
        }
    }

    /// How many posts are unread.
    func unreadCount() async throws(Failure) -> Int {
        do { return try await get("feed/unread", as: Counter.self).count } catch { throw Self.map(error) }
    }

    /// Trending posts; the server is often overloaded, so 503s are retried with a short back-off.
    func trending() async throws(Failure) -> Response<Counter> {
        let retry = RetryPolicy(maximumRetries: 2, baseDelay: .milliseconds(40), jitter: 0)
        do {
            return try await send(Endpoint.get("feed/trending", options: CallOptions(retryPolicy: retry)))
        } catch {
            throw Self.map(error)
        }
    }

    /// Search, at most once a second per query: a second tap within that second is dropped
    /// before it is sent.
    func search(_ query: String) async throws(Failure) -> SearchResult {
        do {
            return try await get(
                "search", parameters: ["q": query], options: CallOptions(interval: .drop(.seconds(1))))
        } catch {
            throw Self.map(error)
        }
    }

    static func map(_ error: CourierError) -> Failure {
        switch error.code {
        case .httpStatus where error.status == .unauthorized, .authentication: .signedOut
        case .throttled: .tooFast
        case .httpStatus where (error.status?.code ?? 0) >= 500: .unavailable
        case .cannotConnect, .timedOut: .offline
        default: .unexpected(error.description)
        }
    }
}
