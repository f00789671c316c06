import Testing

@_spi(Fuzzing) @testable import Courier

@Suite struct CourierErrorTests {
    @Test func descriptionNamesCodeAndStatus() {
        let error = CourierError(.timedOut, "the request took longer than 2s")
        #expect(error.description.contains("timedOut"))
        #expect(error.isTransient)
        #expect(!CourierError(.decoding, "x").isTransient)
    }
}
