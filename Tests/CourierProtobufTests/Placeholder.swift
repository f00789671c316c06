import Testing

@Suite struct ProtobufPlaceholder {
    @Test func compiles() { #expect(Bool(true)) }
}
