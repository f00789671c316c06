/// The query parameter names a paginated endpoint reads.
public struct PaginationParameterNames: Sendable, Hashable {
    var page: String
    var pageSize: String
    var offset: String
    var limit: String
    var cursor: String

    /// The names, each defaulting to the common one (`page`, `per_page`, `offset`, `limit`, `cursor`).
    public init(
        page: String = "page", pageSize: String = "per_page", offset: String = "offset", limit: String = "limit",
        cursor: String = "cursor"
    ) {
        self.page = page
        self.pageSize = pageSize
        self.offset = offset
        self.limit = limit
        self.cursor = cursor
    }
}

extension APIService {
    /// A paginator over a GET endpoint whose answer decodes into `PageModel`.
    /// - Parameters:
    ///   - path: the endpoint, relative to the server; may carry a query of its own.
    ///   - style: page number, offset or cursor, with the page size.
    ///   - type: the model of one page.
    ///   - names: the query parameter names the endpoint reads.
    ///   - options: per-call settings for every page.
    ///   - page: reads the items and the paging metadata out of a page.
    /// - Returns: the paginator; call `first()`, then `next()` while `hasMore`.
    public func paginator<PageModel: Decodable & Sendable, Item: Sendable>(
        _ path: String, style: PaginationStyle, as type: PageModel.Type = PageModel.self,
        names: PaginationParameterNames = PaginationParameterNames(), options: CallOptions = .default,
        page: @escaping @Sendable (PageModel) -> Page<Item>
    ) -> Paginator<Item> {
        let core = self.core
        return Paginator(style: style) { request in
            var items: [(name: String, value: String)] = []
            switch style {
            case .page:
                items = [(names.page, String(request.page ?? 1)), (names.pageSize, String(request.limit))]
            case .offset:
                items = [(names.offset, String(request.offset ?? 0)), (names.limit, String(request.limit))]
            case .cursor:
                if let cursor = request.cursor { items.append((names.cursor, cursor)) }
                items.append((names.limit, String(request.limit)))
            }
            let target = path + (path.contains("?") ? "&" : "?") + ServiceCore.encodeQuery(items)
            let model: PageModel = try await core.send(Endpoint(.get, target, options: options)).value
            return page(model)
        }
    }
}
