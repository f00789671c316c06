import CourierTesting
import Foundation
import Testing

/// A network namespace a test creates with `ip netns add`, drives with `ip -n`, and deletes.
///
/// Needs root (or CAP_SYS_ADMIN) and iproute2; `isAvailable` tells whether this machine
/// allows it, and tests that need one are skipped with that reason otherwise.
struct NetworkNamespace: Sendable {
    let name: String

    /// The file the monitor enters (`setns`).
    var path: String { "/var/run/netns/\(name)" }

    /// Whether `ip netns add` and `ip -n` work here (probed once, with a namespace deleted at
    /// once). In a chroot `ip netns add` works but `ip -n` cannot remount `/`.
    static let isAvailable: Bool = {
        guard let probe = try? NetworkNamespace() else { return false }
        defer { probe.delete() }
        return (try? probe.run("link", "show", "lo")) != nil
    }()

    /// Creates a fresh namespace with a unique name.
    init() throws {
        name = "courier-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try Self.ip(["netns", "add", name])
    }

    /// Runs `ip -n <name> <arguments>`.
    func run(_ arguments: String...) throws {
        try Self.ip(["-n", name] + arguments)
    }

    /// Deletes the namespace (and every interface in it).
    func delete() {
        try? Self.ip(["netns", "delete", name])
    }

    /// A veth pair v0/v1 with 10.77.0.1/24 on v0, both up, and a default route through v0.
    func bringUp() throws {
        try run("link", "set", "v1", "up")
        try run("link", "set", "v0", "up")
        try run("route", "replace", "default", "via", "10.77.0.2", "dev", "v0")
    }

    func addVeth() throws {
        try run("link", "add", "v0", "type", "veth", "peer", "name", "v1")
        try run("addr", "add", "10.77.0.1/24", "dev", "v0")
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Runs `ip` through CourierTesting's `ChildProcess` (posix_spawn and waitpid), like every
    /// other child of the test binary: Foundation's `Process` there has left its child unreaped
    /// and `waitUntilExit()` hanging when other suites spawn children at the same time.
    private static func ip(_ arguments: [String]) throws {
        guard let ip = ChildProcess.find("ip") else { throw Failure(description: "iproute2's ip is not installed") }
        let result = try ChildProcess.run(ip, arguments, capture: .capture, stderr: true)
        guard result.status == 0 else {
            let text = String(decoding: result.output, as: UTF8.self)
            throw Failure(description: "ip \(arguments.joined(separator: " ")): \(text)")
        }
    }
}
