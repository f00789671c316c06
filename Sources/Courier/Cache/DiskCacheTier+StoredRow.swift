import Foundation

extension DiskCacheTier {
    /// The columns of one stored row as read back from SQLite, before they are trusted.
    ///
    /// Decoding is the one place where bytes from disk (possibly damaged, possibly written
    /// by another version) become a `CacheEntry`, so it is kept apart from the SQL to be
    /// fuzzed on its own.
    struct StoredRow {
        var key: String
        var variant: String
        var url: String
        var identity: String
        var head: Data
        var body: Data
        var requestTime: Double
        var responseTime: Double
        var lifetime: Double?
        var hasQuery: Bool
        var checksum: UInt64

        /// The checksum the row's contents should carry.
        var expectedChecksum: UInt64 {
            DiskCacheTier.checksum(
                key: key, variant: variant, head: head, body: body, requestTime: requestTime,
                responseTime: responseTime, lifetime: lifetime)
        }

        /// The entry, or nil when the checksum does not match or the head does not decode.
        func decode() -> CacheEntry? {
            guard checksum == expectedChecksum, let response = CacheHeadCodec.decode(head) else { return nil }
            return CacheEntry(
                key: key, url: url, identity: identity, variant: variant, response: response, body: body,
                requestTime: Date(timeIntervalSince1970: requestTime),
                responseTime: Date(timeIntervalSince1970: responseTime), forcedLifetime: lifetime,
                hasQuery: hasQuery)
        }
    }
}

/// Entry points for the fuzz targets in `Fuzz/`: not API, may change at any time.
@_spi(Fuzzing) public enum CacheFuzzing {
    /// Decodes a stored cache row the way a disk-tier read does and, when it decodes,
    /// exercises everything a lookup derives from it (freshness, `Vary`, validators).
    /// - Parameters:
    ///   - head: the stored head bytes.
    ///   - body: the stored body.
    ///   - url: the stored URL text.
    ///   - variant: the stored secondary key.
    ///   - times: request time, response time and the forced lifetime (NaN: none).
    ///   - hasQuery: whether the URL had a query.
    ///   - checksum: the stored checksum; nil stores the right one, so decoding goes past it.
    /// - Returns: whether the row decoded into an entry.
    @_spi(Fuzzing) public static func decodeStoredRow(
        head: Data, body: Data, url: String, variant: String, times: (Double, Double, Double), hasQuery: Bool,
        checksum: UInt64?
    ) -> Bool {
        var row = DiskCacheTier.StoredRow(
            key: "fuzz " + url, variant: variant, url: url, identity: "fuzz", head: head, body: body,
            requestTime: times.0, responseTime: times.1, lifetime: times.2.isNaN ? nil : times.2,
            hasQuery: hasQuery, checksum: checksum ?? 0)
        if checksum == nil { row.checksum = row.expectedChecksum }
        guard let entry = row.decode() else { return false }
        // What lookups read from an entry: the parsed header values and the reencoded head.
        let now = Date(timeIntervalSince1970: row.responseTime).addingTimeInterval(60)
        _ = entry.varyNames
        _ = entry.cost
        _ = entry.freshnessLifetime(override: nil)
        _ = entry.requiresRevalidation
        _ = entry.conditionalHeaders
        _ = entry.served(now: now, isStale: false)
        _ = entry.merging(notModified: entry.response, requestTime: now, responseTime: now)
        return CacheHeadCodec.decode(CacheHeadCodec.encode(entry.response)) == entry.response
    }
}
