import Foundation
import Synchronization

/// Decoders are pooled, and never deallocated.
///
/// Keyed containers hold their decoder `unowned(unsafe)`: the standard library's container
/// box copies its container for every `decode(_:forKey:)`, and a container without strong
/// references copies without a retain and release. That is sound only if a decoder outlives
/// every container made from it, which decoders that are never deallocated do; a container
/// compares its decode call's `generation` before it reads anything.
///
/// When a call returns, its decoder goes back to the pool, unless something still holds it (a
/// `Decoder` or unkeyed container that escaped `init(from:)`): such a decoder stays invalid,
/// and alive, for good. The pool holds as many decoders as there were concurrent decode
/// calls at most, each with a token buffer of at most 1 MiB.
extension JSONDecoderImpl {
    private static let idle = LockedValue<[JSONDecoderImpl]>([])
    /// Decoders that escaped their call, kept alive for good (held here rather than by an
    /// unbalanced retain, so a leak checker sees them as reachable, which they are meant to be).
    private static let escaped = LockedValue<[JSONDecoderImpl]>([])
    /// Counts the decoders kept alive because they escaped a call made inside
    /// `$escapes.withValue(_:)` (tests check that this is rare). Task-local, so that a count
    /// is the escapes of the calls it watches and not those of other tasks at the same time.
    @TaskLocal static var escapes: EscapeTally?

    /// A count of escaped decoders (see ``escapes``).
    final class EscapeTally: Sendable {
        let count = Atomic<Int>(0)
    }

    /// Parses `bytes` and returns a decoder at the top-level value; call ``recycle(_:)`` after.
    static func make(bytes: UnsafePointer<UInt8>, count: Int, options: JSONDecodingOptions)
        throws(JSONSyntaxError) -> JSONDecoderImpl
    {
        if let impl = idle.withLock({ $0.popLast() }) {
            let tokenCount: Int
            do {
                tokenCount = try JSONParser.parse(bytes: bytes, count: count, into: &impl.state.pointee.storage)
            } catch {
                impl.state.pointee.storage.trim()
                idle.withLock { $0.append(impl) }
                throw error
            }
            impl.begin(
                bytes: bytes, tokens: impl.state.pointee.storage.pointer!, nullIndex: tokenCount - 1,
                options: options, index: 0, path: [])
            return impl
        }
        var storage = JSONTokenStorage()
        let tokenCount: Int
        do {
            tokenCount = try JSONParser.parse(bytes: bytes, count: count, into: &storage)
        } catch {
            storage.trim(keepingUpTo: 0)
            throw error
        }
        let impl = JSONDecoderImpl(
            bytes: bytes, tokens: storage.pointer!, nullIndex: tokenCount - 1, options: options, index: 0, path: [])
        impl.state.pointee.storage = storage
        return impl
    }

    /// A separate decoder for `superDecoder()` over the same document: it may outlive the
    /// container that made it, and is finished with this decoder.
    func subDecoder(at value: Int, path: [any CodingKey]) -> JSONDecoderImpl {
        let decoder: JSONDecoderImpl
        if let pooled = Self.idle.withLock({ $0.popLast() }) {
            decoder = pooled
            decoder.begin(
                bytes: bytes, tokens: tokens, nullIndex: nullIndex, options: options, index: value, path: path)
        } else {
            decoder = JSONDecoderImpl(
                bytes: bytes, tokens: tokens, nullIndex: nullIndex, options: options, index: value, path: path)
        }
        decoder.isValid = isValid
        state.pointee.subDecoders.append(decoder)
        return decoder
    }

    private func begin(
        bytes: UnsafePointer<UInt8>, tokens: UnsafeMutablePointer<JSONToken>, nullIndex: Int,
        options: JSONDecodingOptions, index: Int, path: [any CodingKey]
    ) {
        state.pointee.bytes = bytes
        state.pointee.tokens = tokens
        state.pointee.nullIndex = nullIndex
        state.pointee.options = options
        state.pointee.index = index
        if path.isEmpty {
            state.pointee.path.removeAll(keepingCapacity: true)
        } else {
            state.pointee.path = path
        }
        state.pointee.hintObject = -1
        state.pointee.hintKey = 0
        state.pointee.isValid = true
        advanceGeneration()
    }

    /// Ends the decode call of `impl` (and of its sub-decoders): whatever was made during it
    /// becomes invalid. The decoder goes back to the pool if nothing else holds it.
    static func recycle(_ impl: inout JSONDecoderImpl) {
        impl.finish()
        if isKnownUniquelyReferenced(&impl) {
            impl.state.pointee.storage.trim()
            idle.withLock { $0.append(impl) }
        } else {
            impl.state.pointee.storage.trim(keepingUpTo: 0)
            escapes?.count.add(1, ordering: .relaxed)
            escaped.withLock { $0.append(impl) }  // never released: containers may still point at it
        }
    }

    private func finish() {
        state.pointee.isValid = false
        advanceGeneration()
        state.pointee.path.removeAll(keepingCapacity: true)
        state.pointee.extras.removeAll(keepingCapacity: true)
        state.pointee.options = .default  // releases the caller's closures and userInfo
        var subDecoders: [JSONDecoderImpl] = []
        swap(&subDecoders, &state.pointee.subDecoders)
        while var decoder = subDecoders.popLast() { Self.recycle(&decoder) }
    }
}
