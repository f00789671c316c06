@_spi(Fuzzing) import Courier
import Foundation
import FuzzSupport

// URL composition decides where a request — and its credential — goes. Whatever the base URL
// and relative path, composition either refuses with a `CourierError` or yields a URL on the
// base URL's own scheme and authority, under its path prefix, with no `..` segment, no
// fragment, no control characters; and a path that was accepted is accepted again, unchanged,
// when its encoded form is parsed (normalisation is idempotent).
//
// Input layout: the base URL ended by `\0` (a fixed base when the flag byte's bit 0 is set),
// then the relative path.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzURLComposition(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data: data, size: size)
    let flags = input.byte()
    let baseText = String(decoding: input.field(until: 0), as: UTF8.self)
    let pathText = String(decoding: input.rest(), as: UTF8.self)
    let base: BaseURL
    do {
        base = try BaseURL(flags & 1 == 1 ? "https://api.example.com/v1" : baseText)
    } catch let error as CourierError {
        invariant(error.code == .configuration, "BaseURL threw \(error.code)")
        return 0
    } catch {
        fatalError("BaseURL threw a non-Courier error: \(error)")
    }
    invariant(base.scheme == "http" || base.scheme == "https")
    let path: RelativePath
    do {
        path = try RelativePath(pathText)
    } catch let error as CourierError {
        invariant(error.code == .invalidRequest, "RelativePath threw \(error.code)")
        return 0
    } catch {
        fatalError("RelativePath threw a non-Courier error: \(error)")
    }
    invariant(!path.segments.contains(".."), "a '..' segment was accepted: \(pathText)")

    // Normalisation is idempotent. `encoded` is the normal form that goes on the wire after the
    // base's prefix and a `/` (dot segments removed, so `./name:verb` becomes `name:verb`, which
    // is right on the wire: `/v1/name:verb`, the colon literal). On its own such a text would
    // read as a scheme (RFC 3986 4.2), so it is re-parsed the way it is used: after a `/`.
    guard let again = try? RelativePath("/" + path.encoded) else {
        fatalError("the encoded form of an accepted path is refused: \(path.encoded)")
    }
    invariant(again == path, "re-parsing changed \(path.encoded) to \(again.encoded)")
    let encodedPath = path.encoded.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
    invariant(
        !encodedPath.split(separator: "/").contains { $0 == "." || $0 == ".." },
        "a dot segment in the normal form \(path.encoded)")

    let target = base.target(for: path)
    invariant(target.hasPrefix("/"), "target \(target) is not absolute")
    invariant(!target.hasPrefix("//"), "target \(target) names another host")
    invariant(target.hasPrefix(base.pathPrefix), "target \(target) left the prefix \(base.pathPrefix)")
    invariant(!target.unicodeScalars.contains { $0.value < 0x21 || $0.value >= 0x7F || $0 == "#" || $0 == "\\" })

    // The composed URL stays on the base's origin, as Foundation reads it.
    let text = base.urlString(for: path)
    guard let url = URL(string: text), let components = URLComponents(url: url, resolvingAgainstBaseURL: false)
    else {
        fatalError("the composed URL does not parse: \(text)")
    }
    invariant(components.scheme?.lowercased() == base.scheme, "scheme moved: \(text)")
    invariant(components.user == nil && components.password == nil, "credentials appeared: \(text)")
    // The host Foundation reads is the base URL's host (IPv6 brackets aside).
    let host = (components.host ?? "").lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
    invariant(!host.isEmpty && base.authority.lowercased().contains(host), "host moved: \(text)")
    let segments = components.percentEncodedPath.split(separator: "/")
    invariant(!segments.contains { $0.removingPercentEncoding == ".." }, "'..' in the URL: \(text)")
    _ = base.request(.get, path)
    return 0
}
