// `swift package generate-protos`: runs Courier's scripts/generate-protos.sh on the package's
// .proto files, with the courier-protobuf-gen this plugin depends on (built by SwiftPM, alone:
// the package's own targets may still be empty) and the toolchain's swift-format.
//
//   swift package --allow-writing-to-package-directory generate-protos \
//       --c-target MyProtos --models-target MyProtoModels [--protos Protos] [--include FOLDER …] [--check]
//
// --include names a folder (relative to the package) that the protos import from, like protoc's
// -I; the C and the models of the files imported from it are generated too. Google's
// well-known types need none: Courier's copies are always on the import path.
// --check writes nothing: it fails when the committed generated code is not what the protos
// give. In Courier's own package, without options, it runs the script's own jobs.
import Foundation
import PackagePlugin

@main struct GenerateProtos: CommandPlugin {
    func performCommand(context: PluginContext, arguments: [String]) async throws {
        var extractor = ArgumentExtractor(arguments)
        let check = extractor.extractFlag(named: "check") > 0
        let protos = extractor.extractOption(named: "protos")
        let cTargets = extractor.extractOption(named: "c-target")
        let modelTargets = extractor.extractOption(named: "models-target")
        let includes = extractor.extractOption(named: "include")
        guard extractor.remainingArguments.isEmpty else {
            throw PluginFailure(
                "unexpected arguments \(extractor.remainingArguments.joined(separator: " "))\n\(Self.usage)")
        }

        let package = context.package
        let courier = try Self.courier(from: package)
        let isCourier = courier.id == package.id
        var scriptArguments = check ? ["--check"] : []
        if !(isCourier && cTargets.isEmpty && modelTargets.isEmpty) {
            guard cTargets.count == 1, modelTargets.count == 1, protos.count <= 1 else {
                throw PluginFailure("name the C target and the Swift models target once each\n\(Self.usage)")
            }
            let job =
                [
                    protos.first ?? "Protos", try Self.folder(of: cTargets[0], in: package), cTargets[0],
                    try Self.folder(of: modelTargets[0], in: package),
                ] + (includes.isEmpty ? [] : [includes.joined(separator: ":")])
            scriptArguments += ["--package", package.directoryURL.path, "--job", job.joined(separator: "|")]
        }

        var environment = ProcessInfo.processInfo.environment
        environment["COURIER_PROTOBUF_GEN"] = try context.tool(named: "courier-protobuf-gen").url.path
        if let swiftFormat = try? context.tool(named: "swift-format") {
            environment["SWIFT_FORMAT"] = swiftFormat.url.path
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [courier.directoryURL.appending(path: "scripts/generate-protos.sh").path] + scriptArguments
        process.environment = environment
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw PluginFailure("scripts/generate-protos.sh failed (exit status \(process.terminationStatus))")
        }
    }

    static let usage = """
        usage: swift package --allow-writing-to-package-directory generate-protos \\
                   --c-target NAME --models-target NAME [--protos FOLDER] [--include FOLDER ...] [--check]
        """

    /// Courier's package: this one, or the first dependency (at any depth) named Courier.
    static func courier(from package: Package) throws -> Package {
        var queue = [package]
        var seen = Set<Package.ID>()
        while !queue.isEmpty {
            let next = queue.removeFirst()
            guard seen.insert(next.id).inserted else { continue }
            if next.displayName == "Courier" { return next }
            queue += next.dependencies.map(\.package)
        }
        throw PluginFailure("Courier is not among the package's dependencies")
    }

    /// The target's folder relative to the package: its own when it has sources, else `Sources/NAME`
    /// (SwiftPM leaves a target without sources out of the package, with a warning).
    static func folder(of name: String, in package: Package) throws -> String {
        guard let target = package.targets.first(where: { $0.name == name }) else { return "Sources/\(name)" }
        let root = package.directoryURL.standardizedFileURL.path
        let path = target.directoryURL.standardizedFileURL.path
        guard path.hasPrefix(root + "/") else { throw PluginFailure("target \(name) is outside the package") }
        return String(path.dropFirst(root.count + 1))
    }
}

struct PluginFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
