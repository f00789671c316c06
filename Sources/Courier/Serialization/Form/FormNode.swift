import Foundation

/// The parsed form the decoder reads: each key path becomes a node holding its values,
/// its keyed children, and its appended (`[]`) items.
final class FormNode {
    /// The values written directly at this key, in order (`a=1&a=2` gives two).
    var values: [String] = []
    /// Children by key (`a[b]`, `a.b`, and indices such as `a[0]`).
    var children: [String: FormNode] = [:]
    /// Elements appended with `[]`.
    var items: [FormNode] = []

    init() {}
    init(value: String) { values = [value] }

    var isEmpty: Bool { values.isEmpty && children.isEmpty && items.isEmpty }

    /// Parses a form body or query string.
    /// - Parameters:
    ///   - bytes: `a=1&b[c]=2…`, a leading `?` allowed.
    ///   - nesting: whether `.` also separates keys.
    /// Keys nested deeper than this are refused: the tree is walked recursively, and a hostile
    /// body of `a[a][a]…` must not exhaust the stack.
    static let maximumDepth = 64

    /// - Throws: `CourierError.decoding` for a key nested deeper than ``maximumDepth``.
    static func parse(_ bytes: UnsafeBufferPointer<UInt8>, nesting: URLEncodedForm.NestingStyle) throws -> FormNode {
        let root = FormNode()
        var start = 0
        if bytes.first == UInt8(ascii: "?") { start = 1 }
        while start <= bytes.count {
            var end = start
            while end < bytes.count && bytes[end] != UInt8(ascii: "&") { end += 1 }
            if end > start {
                let pair = UnsafeBufferPointer(rebasing: bytes[start..<end])
                let equals = pair.firstIndex(of: UInt8(ascii: "=")) ?? pair.count
                let key = PercentEncoding.decode(UnsafeBufferPointer(rebasing: pair[0..<equals]), plusAsSpace: true)
                let value =
                    equals < pair.count
                    ? PercentEncoding.decode(
                        UnsafeBufferPointer(rebasing: pair[(equals + 1)...]), plusAsSpace: true) : ""
                if !key.isEmpty {
                    let path = splitKey(key, nesting: nesting)
                    guard path.count <= maximumDepth else {
                        throw CourierError(
                            .decoding, "a form key is nested deeper than \(maximumDepth) levels: \(key.prefix(40))…")
                    }
                    root.insert(path: path[...], value: value)
                }
            }
            start = end + 1
        }
        return root
    }

    /// One step of a key path: a name, or `[]` (append).
    enum Segment: Equatable {
        case name(String)
        case append
    }

    /// `a[b][]` → name a, name b, append; `a.b` too with dot nesting. A malformed key
    /// (an unclosed `[`) is one plain name.
    static func splitKey(_ key: String, nesting: URLEncodedForm.NestingStyle) -> [Segment] {
        let dots = nesting == .dots
        // Most keys are plain names: no scalar array needed.
        if !key.utf8.contains(where: { $0 == UInt8(ascii: "[") || (dots && $0 == UInt8(ascii: ".")) }) {
            return [.name(key)]
        }
        let scalars = Array(key.unicodeScalars)
        var segments: [Segment] = []
        var current = String.UnicodeScalarView()
        var index = 0
        while index < scalars.count && scalars[index] != "[" && !(dots && scalars[index] == ".") {
            current.append(scalars[index])
            index += 1
        }
        guard !current.isEmpty else { return [.name(key)] }
        segments.append(.name(String(current)))
        while index < scalars.count {
            if scalars[index] == "[" {
                guard let close = scalars[(index + 1)...].firstIndex(of: "]") else { return [.name(key)] }
                let inner = String(String.UnicodeScalarView(scalars[(index + 1)..<close]))
                segments.append(inner.isEmpty ? .append : .name(inner))
                index = close + 1
            } else if dots && scalars[index] == "." {
                var end = index + 1
                while end < scalars.count && scalars[end] != "[" && scalars[end] != "." { end += 1 }
                guard end > index + 1 else { return [.name(key)] }
                segments.append(.name(String(String.UnicodeScalarView(scalars[(index + 1)..<end]))))
                index = end
            } else {
                return [.name(key)]
            }
        }
        return segments
    }

    func insert(path: ArraySlice<Segment>, value: String) {
        guard let first = path.first else {
            values.append(value)
            return
        }
        let rest = path.dropFirst()
        switch first {
        case .name(let name):
            if rest.isEmpty, let existing = children[name] {
                existing.values.append(value)
            } else {
                let child = children[name] ?? FormNode()
                children[name] = child
                child.insert(path: rest, value: value)
            }
        case .append:
            if rest.isEmpty {
                items.append(FormNode(value: value))
            } else if let last = items.last, !last.holdsValue(at: rest) {
                last.insert(path: rest, value: value)
            } else {
                let element = FormNode()
                items.append(element)
                element.insert(path: rest, value: value)
            }
        }
    }

    /// Whether a value already sits at `path` (Rails' rule for `a[][x]`: a repeat starts a new element).
    private func holdsValue(at path: ArraySlice<Segment>) -> Bool {
        guard let first = path.first else { return !values.isEmpty }
        switch first {
        case .name(let name): return children[name]?.holdsValue(at: path.dropFirst()) ?? false
        case .append: return items.last?.holdsValue(at: path.dropFirst()) ?? false
        }
    }

    /// The elements when read as an array: appended items, repeated values, or children
    /// keyed by index (sorted). Nil when the children are keyed by names.
    func elements() -> [FormNode]? {
        if children.isEmpty {
            return values.map(FormNode.init(value:)) + items
        }
        guard values.isEmpty, items.isEmpty else { return nil }
        var indexed: [(Int, FormNode)] = []
        indexed.reserveCapacity(children.count)
        for (key, child) in children {
            guard let index = Int(key), index >= 0 else { return nil }
            indexed.append((index, child))
        }
        return indexed.sorted { $0.0 < $1.0 }.map(\.1)
    }
}
