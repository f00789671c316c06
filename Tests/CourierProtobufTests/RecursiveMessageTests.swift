import CourierProtoModels
import Foundation
import Testing

@_spi(Fuzzing) @testable import Courier
@testable import CourierProtobuf

// Messages that contain themselves (Protos/courier/test/recursive.proto): the generated models
// box the singular self-references (`@Indirect`), decode and encode to any depth within the
// decoder's `maxDepth`, and refuse deeper bytes with `.decoding`. The goldens (category_tree,
// expr_nested) are checked by GoldenTests and GeneratedModelTests like every other golden.

@Suite struct RecursiveMessageTests {
    typealias Category = CourierProtoModels.Category
    typealias Expr = CourierProtoModels.Expr

    /// A chain of `depth` categories: the top one, its parent, its parent's parent, …
    static func chain(_ depth: Int) -> Category {
        var category = Category(name: "level \(depth)")
        for level in stride(from: depth - 1, through: 1, by: -1) {
            category = Category(name: "level \(level)", parent: category)
        }
        return category
    }

    /// A chain of `depth` categories through `children` (each has one child).
    static func childChain(_ depth: Int) -> Category {
        var category = Category(name: "leaf")
        for _ in 1..<depth { category = Category(name: "inner", children: [category]) }
        return category
    }

    @Test func categoryIsRecursiveInTheSchema() {
        #expect(NestingLimit.schemaDepth(Category.protobufDescriptor) == .max)
        #expect(NestingLimit.schemaDepth(Expr.protobufDescriptor) == .max)
    }

    /// Exactly `maxDepth` levels decode, to the same value, on the generated (direct) path and
    /// the hand-written Codable path; one level more is a `.decoding` error naming the limit.
    @Test(arguments: [1, 2, 10, 100, 200])
    func singularSelfReferenceRoundTripsUpToTheDepthLimit(_ depth: Int) throws {
        let category = Self.chain(depth)
        let bytes = try ProtobufEncoder().encode(category)
        let decoder = ProtobufDecoder(limits: .init(maxDepth: depth))
        let decoded = try decoder.decode(Category.self, from: bytes)
        #expect(decoded == category)
        #expect(try ProtobufEncoder().encode(decoded) == bytes)
        let codable = try decoder.decode(CourierProtobufTests.Category.self, from: bytes)
        #expect(try ProtobufEncoder().encode(codable) == bytes, "the Codable path writes the same bytes")

        if depth > 1 {
            let tooDeep = ProtobufDecoder(limits: .init(maxDepth: depth - 1))
            let error = #expect(throws: CourierError.self) { try tooDeep.decode(Category.self, from: bytes) }
            #expect(error?.code == .decoding)
            #expect(error?.message.contains("deeper than \(depth - 1) levels") == true, "\(error?.message ?? "")")
            #expect(throws: CourierError.self) {
                try tooDeep.decode(CourierProtobufTests.Category.self, from: bytes)
            }
        }
    }

    @Test(arguments: [2, 50, 200])
    func repeatedSelfReferenceRoundTripsUpToTheDepthLimit(_ depth: Int) throws {
        let category = Self.childChain(depth)
        let bytes = try ProtobufEncoder().encode(category)
        #expect(try ProtobufDecoder(limits: .init(maxDepth: depth)).decode(Category.self, from: bytes) == category)
        let error = #expect(throws: CourierError.self) {
            try ProtobufDecoder(limits: .init(maxDepth: depth - 1)).decode(Category.self, from: bytes)
        }
        #expect(error?.code == .decoding)
    }

    /// The default limit (100) refuses a 101-level chain; 200 is the most any decoder accepts.
    @Test func defaultAndClampedLimits() throws {
        #expect(
            try ProtobufDecoder().decode(Category.self, from: ProtobufEncoder().encode(Self.chain(100))).name
                == "level 1")
        let deeper = try ProtobufEncoder().encode(Self.chain(101))
        #expect(throws: CourierError.self) { try ProtobufDecoder().decode(Category.self, from: deeper) }
        let tooDeep = try ProtobufEncoder().encode(Self.chain(201))
        #expect(throws: CourierError.self) {
            try ProtobufDecoder(limits: .init(maxDepth: 10_000)).decode(Category.self, from: tooDeep)
        }
    }

    /// Recursion through another message and a oneof (`Expr` → `Binary` → `Expr`).
    @Test func mutualRecursionThroughAOneof() throws {
        var expr = Expr(literal: 7)
        for i in 0..<60 {
            expr = Expr(binary: .init(op: i.isMultiple(of: 2) ? "+" : "*", left: expr, right: Expr(literal: Int64(i))))
        }
        let bytes = try ProtobufEncoder().encode(expr)
        // 60 binaries: 121 levels of messages (Expr, Binary, Expr, …).
        let decoded = try ProtobufDecoder(limits: .init(maxDepth: 121)).decode(Expr.self, from: bytes)
        #expect(decoded == expr)
        #expect(try ProtobufEncoder().encode(decoded) == bytes)
        let error = #expect(throws: CourierError.self) { try ProtobufDecoder().decode(Expr.self, from: bytes) }
        #expect(error?.code == .decoding)
        #expect(throws: CourierError.self) {
            try ProtobufDecoder(limits: .init(maxDepth: 120)).decode(CourierProtobufTests.Expr.self, from: bytes)
        }
    }

    /// The boxed field keeps value semantics: a copy is independent, `==` and hashing compare
    /// values, and JSON shows the field as a plain optional (left out when nil).
    @Test func boxedFieldsAreValues() throws {
        let original = Self.chain(3)
        var copy = original
        copy.parent?.name = "renamed"
        #expect(original.parent?.name == "level 2")
        #expect(copy.parent?.name == "renamed")
        #expect(copy != original)
        copy.parent?.name = "level 2"
        #expect(copy == original)
        #expect(copy.hashValue == original.hashValue)
        #expect(Set([copy, original]).count == 1)

        let json = try JSONEncoder().encode(Category(name: "solo"))
        #expect(String(decoding: json, as: UTF8.self).contains("parent") == false)
        #expect(try JSONDecoder().decode(Category.self, from: json) == Category(name: "solo"))
        let nested = try JSONEncoder().encode(original)
        #expect(try JSONDecoder().decode(Category.self, from: nested) == original)
    }
}
