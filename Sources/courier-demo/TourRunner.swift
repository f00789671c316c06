import Courier
import Foundation

/// A step's expectation that did not hold.
struct TourFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Fails the current step with `message` unless `condition` holds.
func expect(_ condition: Bool, _ message: @autoclosure () -> String) throws(TourFailure) {
    if !condition { throw TourFailure(message()) }
}

/// Runs tour steps one after another, printing a line per step with its timing, and
/// remembering which ones did not behave as shown.
final class TourRunner {
    private let clock = ContinuousClock()
    private var number = 0
    private(set) var failures: [String] = []
    private let write: (String) -> Void

    /// - Parameter write: where lines go (standard output by default).
    init(
        write: @escaping (String) -> Void = {
            print($0)
            fflush(nil)  // line by line, also into a pipe
        }
    ) {
        self.write = write
    }

    /// Runs one step: `body` does the work, checks its expectations and returns what to
    /// show (the first line on the step's line, more lines indented below it).
    func step(_ title: String, _ body: () async throws -> String) async {
        number += 1
        let start = clock.now
        let outcome: Result<String, any Error>
        do {
            outcome = .success(try await body())
        } catch {
            outcome = .failure(error)
        }
        let elapsed = Self.format(clock.now - start)
        let label = "\(String(format: "%2d", number)). \(title)".padding(toLength: 34, withPad: " ", startingAt: 0)
        switch outcome {
        case .success(let text):
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            write("  ✓ \(label) \(elapsed)  \(lines.first ?? "")")
            for line in lines.dropFirst() { write(String(repeating: " ", count: 50) + line) }
        case .failure(let error):
            let reason = (error as? TourFailure)?.description ?? "unexpected error: \(error)"
            write("  ✗ \(label) \(elapsed)  \(reason)")
            failures.append("\(number). \(title): \(reason)")
        }
    }

    /// A duration as `12.3 ms`, right-aligned.
    static func format(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let milliseconds = Double(seconds) * 1_000 + Double(attoseconds) / 1e15
        let text = milliseconds < 10 ? String(format: "%.2f ms", milliseconds) : String(format: "%.1f ms", milliseconds)
        return String(repeating: " ", count: max(0, 9 - text.count)) + text
    }

    /// `16 KB`, `512 KB`, `1.5 MB`.
    static func bytes(_ count: Int) -> String {
        count >= 1 << 20
            ? String(format: "%.1f MB", Double(count) / Double(1 << 20))
            : count >= 1024 ? "\(count / 1024) KB" : "\(count) B"
    }

    /// Shows at most the first 5 characters of a credential: `Bearer tok-1` stays readable,
    /// a real token would show as `Bearer eyJhb…` (the demo's tokens are fake; the habit is
    /// the point).
    static func mask(_ authorization: String?) -> String {
        guard let authorization else { return "(none)" }
        let parts = authorization.split(separator: " ", maxSplits: 1)
        guard parts.count == 2 else { return "…" }
        let token = parts[1]
        return "\(parts[0]) " + (token.count > 6 ? "\(token.prefix(5))…" : String(token))
    }
}
