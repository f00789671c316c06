import HTTPTypes

/// Entry points for the fuzz targets in `Fuzz/`: not API, may change at any time.
@_spi(Fuzzing) public enum ResponseHeadFuzzing {
    /// What one parse of a head ended in.
    @_spi(Fuzzing) public struct Outcome {
        /// The event after the last line taken (the parse stops at `invalid` or `tooLarge`, as
        /// the transfer does).
        @_spi(Fuzzing) public var lastEvent: String
        /// The broken invariant, if any.
        @_spi(Fuzzing) public var violation: String?
    }

    /// Feeds `lines` to the response-head parser the way the header callback does and checks
    /// what a head it builds may hold.
    /// - Parameter lines: header lines, each with its line end (as curl hands them over).
    /// - Returns: the last event, and the first invariant the parser broke.
    @_spi(Fuzzing) public static func parse(lines: [[UInt8]]) -> Outcome {
        var parser = ResponseHeadParser()
        var event = ResponseHeadParser.Event.needMore
        var bytes = 0
        for line in lines {
            bytes += line.count
            event = line.withUnsafeBufferPointer { parser.consume($0) }
            if event == .complete {
                if let violation = check(parser.response) {
                    return Outcome(lastEvent: "complete", violation: violation)
                }
            }
            if event == .invalid || event == .tooLarge { break }
        }
        if event == .needMore || event == .complete {
            // Whatever was taken stayed within the bounds.
            if bytes > ResponseHeadParser.maxHeadBytes {
                return Outcome(lastEvent: "\(event)", violation: "took \(bytes) bytes of head")
            }
            if parser.response.headerFields.count > ResponseHeadParser.maxFieldCount {
                return Outcome(lastEvent: "\(event)", violation: "built more than the field bound")
            }
        }
        return Outcome(lastEvent: "\(event)", violation: check(parser.response))
    }

    private static func check(_ response: HTTPResponse) -> String? {
        let code = response.status.code
        guard code == 0 || (100...999).contains(code) else { return "status \(code)" }
        for field in response.headerFields {
            if field.value.utf8.contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }) {
                return "control byte in the value of \(field.name)"
            }
            if let first = field.value.utf8.first, first == 0x20 || first == 0x09 {
                return "untrimmed value of \(field.name)"
            }
        }
        return nil
    }
}
