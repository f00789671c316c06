// courier-protobuf-gen: plain Swift models with Courier's fast path, from a descriptor set.
//
//   courier-protobuf-gen --descriptor-set FILE --c-module MODULE --output DIR [--internal]
//   courier-protobuf-gen --descriptor-set FILE --protoc-plugin PLUGIN [--parameter P] --output DIR
//   courier-protobuf-gen --descriptor-set FILE --list-files
//
// FILE is what `protoc-c --descriptor_set_out` writes for the .proto files whose C is in the
// C target MODULE (scripts/generate-protos.sh runs both). For each .proto file it writes
// DIR/<path with / as _>.pb.swift: a struct per message, an enum per enum, and each message's
// `ProtobufMessage` and `ProtobufDirectCodable` conformances. Other files in DIR are left alone.
//
// With --protoc-plugin it instead runs a protoc code generator plugin (protoc-gen-NAME, for
// example protoc-gen-swift) on the descriptor set, as protoc would, and writes the files it
// returns: protoc-c has no --plugin option.
//
// With --list-files it prints the name of each .proto file of the set, one a line (with
// `protoc --include_imports`, the files imported from other folders too).
import Foundation

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("courier-protobuf-gen: \(message)\n".utf8))
    exit(1)
}

var descriptorSet: String?
var cModule: String?
var output: String?
var access = "public"
var plugin: String?
var parameter = ""
var listFiles = false
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--descriptor-set": descriptorSet = arguments.popFirst()
    case "--c-module": cModule = arguments.popFirst()
    case "--output": output = arguments.popFirst()
    case "--internal": access = "internal"
    case "--protoc-plugin": plugin = arguments.popFirst()
    case "--parameter": parameter = arguments.popFirst() ?? ""
    case "--list-files": listFiles = true
    default: fail("unknown argument \(argument)")
    }
}
guard let descriptorSet, listFiles || output != nil && (cModule != nil || plugin != nil) else {
    fail(
        "usage: courier-protobuf-gen --descriptor-set FILE (--c-module MODULE | --protoc-plugin PLUGIN) --output DIR"
            + " | --list-files")
}

/// Runs `plugin` with a request for every file of the set; writes the files it returns.
func runPlugin(_ plugin: String, descriptorSet data: Data, parameter: String, output: String) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: plugin)
    let input = Pipe()
    let result = Pipe()
    process.standardInput = input
    process.standardOutput = result
    try process.run()
    try input.fileHandleForWriting.write(
        contentsOf: Data(try pluginRequest(descriptorSet: [UInt8](data), parameter: parameter)))
    try input.fileHandleForWriting.close()
    let response = result.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { fail("\(plugin) exited with status \(process.terminationStatus)") }
    try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
    for (name, content) in try pluginResponseFiles([UInt8](response)) {
        let url = URL(fileURLWithPath: output + "/" + name)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(content).write(to: url)
    }
}

/// The generator's work, in a function: its values are released when it returns, so that a
/// LeakSanitizer build does not take what `exit` leaves on the stack for leaks.
@MainActor func generate() throws {
    guard let data = FileManager.default.contents(atPath: descriptorSet) else { fail("cannot read \(descriptorSet)") }
    if listFiles {
        for file in try readDescriptorSet([UInt8](data)) { print(file.name) }
        return
    }
    guard let output else { fail("--output is required") }
    if let plugin {
        try runPlugin(plugin, descriptorSet: data, parameter: parameter, output: output)
        return
    }
    guard let cModule else { fail("--c-module is required") }
    let files = try readDescriptorSet([UInt8](data))
    let schema = try Schema(files: files)
    let generator = SwiftGenerator(
        schema: schema, cModule: cModule, access: access, indirectFields: schema.indirectFields())
    try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
    for file in files where (!file.messages.isEmpty || !file.enums.isEmpty) && !WellKnownTypes.generatesNoSwift(file) {
        let base = file.name.hasSuffix(".proto") ? String(file.name.dropLast(6)) : file.name
        let path = output + "/" + base.replacingOccurrences(of: "/", with: "_") + ".pb.swift"
        let source: String
        do { source = try generator.source(for: file) } catch { fail("\(file.name): \(error)") }
        try Data(source.utf8).write(to: URL(fileURLWithPath: path))
    }
}

do {
    try generate()
} catch {
    fail("\(error)")
}
