import Courier
import CourierTesting
import Foundation

// courier-demo: starts the embedded fixture API on loopback and runs a tour of example domain
// services against it. See `DemoCommand.usage`, or run with --help.

let command: DemoCommand
do {
    command = try DemoCommand.parse(Array(CommandLine.arguments.dropFirst()))
} catch {
    FileHandle.standardError.write(Data("courier-demo: \(error)\n\n\(DemoCommand.usage)\n".utf8))
    exit(2)
}

/// Runs the command; returns the process's exit status.
func main(_ command: DemoCommand) async -> Int32 {
    let cacheDirectory = FileManager.default.temporaryDirectory
        .appendingPathComponent("courier-demo-\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString)").path
    defer { try? FileManager.default.removeItem(atPath: cacheDirectory) }
    // Ctrl-C (also the way out of --serve) removes the cache folder too.
    signal(SIGINT, SIG_IGN)
    let interrupt = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
    interrupt.setEventHandler {
        try? FileManager.default.removeItem(atPath: cacheDirectory)
        exit(130)
    }
    interrupt.resume()
    defer { interrupt.cancel() }
    let runner = TourRunner()
    let clock = ContinuousClock()
    let start = clock.now
    do {
        let failures: [String]
        switch command {
        case .help:
            print(DemoCommand.usage)
            return 0
        case .serve:
            let fixture = try FixtureAPI()
            print("fixture API on \(fixture.apiURL.absoluteString) (CDN: \(fixture.cdnURL) → 127.0.0.1); Ctrl-C stops")
            fflush(nil)  // at once, also into a pipe or a file
            while true { try await Task.sleep(for: .seconds(3600)) }
        case .tour:
            let fixture = try FixtureAPI()
            defer { fixture.stop() }
            print("courier-demo: fixture API on \(fixture.apiURL.absoluteString), cache in \(cacheDirectory)\n")
            failures = try await DemoTour(fixture: fixture, cacheDirectory: cacheDirectory).run(runner)
        case .generic(let baseURL):
            print("courier-demo: generic tour against \(baseURL), cache in \(cacheDirectory)\n")
            failures = try await GenericTour(baseURL: baseURL, cacheDirectory: cacheDirectory).run(runner)
        }
        let total = TourRunner.format(clock.now - start).trimmingCharacters(in: .whitespaces)
        if failures.isEmpty {
            print("\nevery step behaved as shown (\(total) in all)")
            return 0
        }
        print("\n\(failures.count) step\(failures.count == 1 ? "" : "s") did not behave as shown:")
        for failure in failures { print("  - \(failure)") }
        return 1
    } catch {
        FileHandle.standardError.write(Data("courier-demo: could not start: \(error)\n".utf8))
        return 1
    }
}

exit(await main(command))
