// The messages and enums of a descriptor set, resolved to the Swift names the generator emits.
import ProtobufNaming

/// One generated type: where it comes from and what it is called in Swift.
struct SchemaType {
    enum Kind {
        case message(MessageDescriptor)
        case enumeration(EnumDescriptor)
        /// A well-known type mapped to a Swift type (`swiftPath`); `zero` is its default value.
        case wellKnown(zero: String)
    }
    /// The proto full name without the leading dot (`courier.test.Legacy.Child`).
    let fullName: String
    /// The Swift path from the module's top level (`Legacy.Child`).
    let swiftPath: String
    let kind: Kind
    let file: String
}

/// Every type of the descriptor set by full name, with checks that the set can be generated.
struct Schema {
    private(set) var types: [String: SchemaType] = [:]
    /// Simple Swift names of every generated type, to qualify standard types they would shadow;
    /// and the property names that start with a capital (`bytes Data = 1;`, written for C#): in
    /// their struct they hide the type of that name (`Data()` would be the property).
    private(set) var simpleNames: Set<String> = []

    init(files: [FileDescriptor]) throws {
        var topLevel: [String: String] = [:]
        for file in files where !WellKnownTypes.generatesNoSwift(file) {
            let prefix = file.package.isEmpty ? "" : file.package + "."
            for message in file.messages {
                try claim(message.name, fullName: prefix + message.name, in: &topLevel)
                try add(
                    message, fullName: prefix + message.name, swiftPath: swiftTypeName(message.name), file: file.name)
            }
            for enumeration in file.enums {
                try claim(enumeration.name, fullName: prefix + enumeration.name, in: &topLevel)
                try add(
                    enumeration, fullName: prefix + enumeration.name, swiftPath: swiftTypeName(enumeration.name),
                    file: file.name)
            }
        }
    }

    private func claim(_ name: String, fullName: String, in topLevel: inout [String: String]) throws {
        if let other = topLevel[name] {
            throw DescriptorError(
                description: "\(fullName) and \(other) would both be the Swift type \(name): generate their "
                    + "packages into separate Swift targets")
        }
        topLevel[name] = fullName
    }

    private mutating func add(_ message: MessageDescriptor, fullName: String, swiftPath: String, file: String) throws {
        if message.fields.contains(where: { $0.kind == .group }) {
            throw DescriptorError(description: "\(fullName): groups are not supported")
        }
        types[fullName] = SchemaType(fullName: fullName, swiftPath: swiftPath, kind: .message(message), file: file)
        if message.isMapEntry { return }
        simpleNames.insert(message.name)
        for field in message.fields where camelCase(field.name).first?.isUppercase == true {
            simpleNames.insert(camelCase(field.name))
        }
        for nested in message.nested {
            try add(
                nested, fullName: fullName + "." + nested.name, swiftPath: swiftPath + "." + swiftTypeName(nested.name),
                file: file)
        }
        for enumeration in message.enums {
            try add(
                enumeration, fullName: fullName + "." + enumeration.name,
                swiftPath: swiftPath + "." + swiftTypeName(enumeration.name), file: file)
        }
    }

    private mutating func add(_ enumeration: EnumDescriptor, fullName: String, swiftPath: String, file: String) throws {
        types[fullName] = SchemaType(
            fullName: fullName, swiftPath: swiftPath, kind: .enumeration(enumeration), file: file)
        simpleNames.insert(enumeration.name)
    }

    /// The type a message or enum field names.
    func type(of field: FieldDescriptor, in owner: String) throws -> SchemaType {
        let name = field.typeName.hasPrefix(".") ? String(field.typeName.dropFirst()) : field.typeName
        if let (swiftType, zero) = WellKnownTypes.swiftType(of: name, qualified: qualified) {
            return SchemaType(fullName: name, swiftPath: swiftType, kind: .wellKnown(zero: zero), file: "")
        }
        guard let type = types[name] else {
            throw DescriptorError(
                description: "\(owner).\(field.name): type \(field.typeName) is not in the descriptor set"
                    + (name.hasPrefix("google.protobuf.")
                        ? " (Courier maps only the well-known types of "
                            + "\(WellKnownTypes.files.sorted().joined(separator: ", ")))" : ""))
        }
        return type
    }

    /// The type that hides `type` where `owner` (a message's full name) names it, if any: Swift
    /// looks the first component of `type.swiftPath` up in `owner`'s nested types, then in those
    /// of each message around it, and only then at the top level, where every path starts.
    func typeHiding(_ type: SchemaType, in owner: String) -> String? {
        guard let first = type.swiftPath.split(separator: ".").first.map(String.init) else { return nil }
        var scope = owner
        while case .message(let message)? = types[scope]?.kind {
            let nested = message.nested.filter { !$0.isMapEntry }.map(\.name) + message.enums.map(\.name)
            if let name = nested.first(where: { swiftTypeName($0) == first }) { return scope + "." + name }
            guard let dot = scope.lastIndex(of: ".") else { break }
            scope = String(scope[..<dot])
        }
        return nil
    }

    /// A standard type's name, module-qualified when a generated type would shadow it.
    func qualified(_ name: String, in module: String) -> String {
        simpleNames.contains(name) ? "\(module).\(name)" : name
    }

    /// The singular message fields that lead back to their own message (`Category parent = 2;`,
    /// or `Expr` → `Binary` → `Expr`), as `<message full name>.<field name>`: a Swift struct cannot
    /// contain itself, so these are generated as `@Indirect` (boxed) Optionals. Every cycle of
    /// singular fields passes only through such fields, so boxing them is enough; repeated and
    /// map fields are arrays and dictionaries, which are boxed already.
    func indirectFields() -> Set<String> {
        var result: Set<String> = []
        for (name, type) in types {
            guard case .message(let message) = type.kind else { continue }
            for field in message.fields where field.kind == .message && field.label != .repeated {
                var seen: Set<String> = []
                if reaches(String(field.typeName.drop { $0 == "." }), name, &seen) {
                    result.insert(name + "." + field.name)
                }
            }
        }
        return result
    }

    /// Whether `target` is `name` or reachable from it through singular message fields.
    private func reaches(_ name: String, _ target: String, _ seen: inout Set<String>) -> Bool {
        if name == target { return true }
        guard seen.insert(name).inserted, case .message(let message)? = types[name]?.kind else { return false }
        for field in message.fields where field.kind == .message && field.label != .repeated {
            if reaches(String(field.typeName.drop { $0 == "." }), target, &seen) { return true }
        }
        return false
    }
}

/// The Swift spelling of a proto type name (protobuf type names are already UpperCamel), as one
/// component of a type's path: keywords in backticks, so that a nested `Type` is not read as
/// its parent's metatype and a message `Any` is not Swift's `Any`.
func swiftTypeName(_ name: String) -> String {
    swiftKeywords.contains(name) ? "`\(name)`" : name
}

/// Google's well-known types (google/protobuf/*.proto) that generated models hold as Swift types
/// of Swift, Foundation and CourierProtobuf instead of generated structs.
enum WellKnownTypes {
    static let files: Set<String> = [
        "google/protobuf/any.proto", "google/protobuf/duration.proto", "google/protobuf/empty.proto",
        "google/protobuf/struct.proto", "google/protobuf/timestamp.proto", "google/protobuf/wrappers.proto",
    ]

    /// Whether `file` is one of them: its C is generated, its Swift is not.
    static func generatesNoSwift(_ file: FileDescriptor) -> Bool {
        file.package == "google.protobuf" && files.contains(file.name)
    }

    /// The Swift type and default value of the message `fullName`, or nil when it is not one of them.
    static func swiftType(
        of fullName: String, qualified: (_ name: String, _ module: String) -> String
    ) -> (type: String, zero: String)? {
        let value = qualified("ProtobufValue", "CourierProtobuf")
        switch fullName {
        case "google.protobuf.Timestamp": return made(qualified("ProtobufTimestamp", "CourierProtobuf"))
        case "google.protobuf.Duration":
            return (qualified("Duration", "Swift"), qualified("Duration", "Swift") + ".zero")
        case "google.protobuf.DoubleValue": return (qualified("Double", "Swift"), "0")
        case "google.protobuf.FloatValue": return (qualified("Float", "Swift"), "0")
        case "google.protobuf.Int64Value": return (qualified("Int64", "Swift"), "0")
        case "google.protobuf.UInt64Value": return (qualified("UInt64", "Swift"), "0")
        case "google.protobuf.Int32Value": return (qualified("Int32", "Swift"), "0")
        case "google.protobuf.UInt32Value": return (qualified("UInt32", "Swift"), "0")
        case "google.protobuf.BoolValue": return (qualified("Bool", "Swift"), "false")
        case "google.protobuf.StringValue": return (qualified("String", "Swift"), "\"\"")
        case "google.protobuf.BytesValue": return made(qualified("Data", "Foundation"))
        case "google.protobuf.Empty": return made(qualified("ProtobufEmpty", "CourierProtobuf"))
        case "google.protobuf.Struct": return ("[\(qualified("String", "Swift")): \(value)]", "[:]")
        case "google.protobuf.Value": return (value, value + ".null")
        case "google.protobuf.ListValue": return ("[\(value)]", "[]")
        case "google.protobuf.Any": return made(qualified("ProtobufAny", "CourierProtobuf"))
        default: return nil
        }
    }

    private static func made(_ type: String) -> (type: String, zero: String) { (type, type + "()") }
}
