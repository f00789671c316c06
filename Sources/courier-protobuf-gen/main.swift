// courier-protobuf-gen: plain Swift models with Courier's fast path, from a descriptor set.
//
//   courier-protobuf-gen --descriptor-set FILE --c-module MODULE --output DIR [--internal]
//
// FILE is what `protoc-c --descriptor_set_out` writes for the .proto files whose C is in the
// C target MODULE (scripts/generate-protos.sh runs both). For each .proto file it writes
// DIR/<path with / as _>.pb.swift: a struct per message, an enum per enum, and each message's
// `ProtobufMessage` and `ProtobufDirectCodable` conformances. Other files in DIR are left alone.
import Foundation

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("courier-protobuf-gen: \(message)\n".utf8))
    exit(1)
}

var descriptorSet: String?
var cModule: String?
var output: String?
var access = "public"
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--descriptor-set": descriptorSet = arguments.popFirst()
    case "--c-module": cModule = arguments.popFirst()
    case "--output": output = arguments.popFirst()
    case "--internal": access = "internal"
    default: fail("unknown argument \(argument)")
    }
}
guard let descriptorSet, let cModule, let output else {
    fail("usage: courier-protobuf-gen --descriptor-set FILE --c-module MODULE --output DIR [--internal]")
}

do {
    guard let data = FileManager.default.contents(atPath: descriptorSet) else { fail("cannot read \(descriptorSet)") }
    let files = try readDescriptorSet([UInt8](data))
    let schema = try Schema(files: files)
    try schema.checkNoRecursion()
    let generator = SwiftGenerator(schema: schema, cModule: cModule, access: access)
    try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
    for file in files where !file.messages.isEmpty || !file.enums.isEmpty {
        let base = file.name.hasSuffix(".proto") ? String(file.name.dropLast(6)) : file.name
        let path = output + "/" + base.replacingOccurrences(of: "/", with: "_") + ".pb.swift"
        try Data(try generator.source(for: file).utf8).write(to: URL(fileURLWithPath: path))
    }
} catch {
    fail("\(error)")
}
