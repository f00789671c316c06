import Foundation

/// What the command line asked for. Parsed by hand: the demo has no dependencies beyond Courier.
enum DemoCommand: Equatable {
    /// The full tour against the embedded fixture API.
    case tour
    /// The generic part of the tour against another (httpbin-style) server.
    case generic(baseURL: String)
    /// Start the fixture API and wait, to point other clients at it.
    case serve
    /// Print the usage.
    case help

    static let usage = """
        courier-demo — a tour of Courier against a loopback fixture API

        USAGE
          courier-demo                   run the whole tour against the embedded fixture API
          courier-demo --base-url URL    run the generic steps against an httpbin-style server
                                         (GET /get, POST /anything, GET /bytes/N), e.g.
                                         --base-url https://httpbin.org
          courier-demo --serve           start the fixture API, print its URL, wait (Ctrl-C stops)
          courier-demo --help            show this text

        The tour: log in (the login notification puts the token on the next requests) → a JSON
        GET into a model → a form POST → a protobuf endpoint → a "CDN" host cached for a year →
        an endpoint failing twice, then succeeding on retry → a throttled double tap → a batch
        with progress → pagination to the end → an expired token refreshed once for several
        concurrent calls → a multipart upload with progress → log out.

        Each step checks what reached the server; the exit status is 0 when every step behaved
        as shown, 1 when one did not, 2 for a usage error. The cache lives in a temporary
        folder removed at exit.
        """

    /// Parses the arguments after the program name.
    /// - Throws: a message for the user when the arguments make no sense.
    static func parse(_ arguments: [String]) throws(UsageError) -> DemoCommand {
        var command = DemoCommand.tour
        var index = arguments.startIndex
        while index < arguments.endIndex {
            let argument = arguments[index]
            switch argument {
            case "-h", "--help", "help":
                return .help
            case "--serve":
                command = .serve
            case "--base-url":
                index += 1
                guard index < arguments.endIndex else { throw UsageError("--base-url needs a URL") }
                command = .generic(baseURL: try checkedURL(arguments[index]))
            default:
                if argument.hasPrefix("--base-url=") {
                    command = .generic(baseURL: try checkedURL(String(argument.dropFirst("--base-url=".count))))
                } else {
                    throw UsageError("unknown argument '\(argument)'")
                }
            }
            index += 1
        }
        return command
    }

    private static func checkedURL(_ text: String) throws(UsageError) -> String {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            url.host != nil
        else {
            throw UsageError("'\(text)' is not an http or https URL")
        }
        return text.hasSuffix("/") ? String(text.dropLast()) : text
    }
}

/// A command line that cannot be run.
struct UsageError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
