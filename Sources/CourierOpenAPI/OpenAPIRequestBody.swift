import Courier
import Foundation
import OpenAPIRuntime

/// How an operation's `HTTPBody` becomes the body of a Courier call: collected in memory, up to
/// a limit, so that every attempt of the call (a retry, a credential refresh) sends it again,
/// whether or not the `HTTPBody` can be iterated twice.
///
/// The one place that reads request bodies: when Courier's calls take a streamed body, this is
/// what changes (a body of known length and `.multiple` iteration could stream as it is).
enum OpenAPIRequestBody {
    /// The bytes of `body`.
    /// - Parameters:
    ///   - body: the generated code's body, if any.
    ///   - limit: the most bytes to buffer.
    /// - Returns: the bytes, or nil without a body.
    /// - Throws: `CourierError.invalidRequest` for a body over `limit`; `.cancelled` when the
    ///   task is cancelled; `.encoding` when the body's sequence fails.
    static func collect(_ body: HTTPBody?, limit: Int) async throws(CourierError) -> Data? {
        guard let body else { return nil }
        if case .known(let length) = body.length, length > limit {
            throw tooLarge(length, limit: limit)
        }
        var data = Data()
        // At most `maxReservation` up front, whatever the body declares: a declared length is
        // not a byte read yet (`Int64.max` with a limit of `Int.max` trapped).
        if case .known(let length) = body.length { data.reserveCapacity(Int(min(length, maxReservation))) }
        do {
            for try await chunk in body {
                guard data.count + chunk.count <= limit else {
                    throw tooLarge(Int64(data.count + chunk.count), limit: limit)
                }
                data.append(contentsOf: chunk)
            }
            // Some sequences (`AsyncStream`) end early when their task is cancelled: what was
            // read is not the whole body.
            if Task.isCancelled { throw CancellationError() }
        } catch let error as CourierError {
            throw error
        } catch is CancellationError {
            throw CourierError(.cancelled, "the call was cancelled while its request body was read")
        } catch {
            throw CourierError(.encoding, "the request body could not be read: \(error)", underlying: error)
        }
        return data
    }

    /// The most bytes reserved before they arrive; the buffer grows past it as bytes come.
    static let maxReservation: Int64 = 4 << 20

    private static func tooLarge(_ length: Int64, limit: Int) -> CourierError {
        CourierError(
            .invalidRequest,
            "the request body (\(length) bytes or more) is over CourierTransport.maxRequestBodySize (\(limit) bytes)")
    }
}
