// The messages and enums of a descriptor set, resolved to the Swift names the generator emits.

/// One generated type: where it comes from and what it is called in Swift.
struct SchemaType {
    enum Kind {
        case message(MessageDescriptor)
        case enumeration(EnumDescriptor)
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
    /// Simple Swift names of every generated type, to qualify standard types they would shadow.
    private(set) var simpleNames: Set<String> = []

    init(files: [FileDescriptor]) throws {
        var topLevel: [String: String] = [:]
        for file in files {
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
        simpleNames.insert(swiftTypeName(message.name))
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
        simpleNames.insert(swiftTypeName(enumeration.name))
    }

    /// The type a message or enum field names.
    func type(of field: FieldDescriptor, in owner: String) throws -> SchemaType {
        let name = field.typeName.hasPrefix(".") ? String(field.typeName.dropFirst()) : field.typeName
        guard let type = types[name] else {
            throw DescriptorError(
                description: "\(owner).\(field.name): type \(field.typeName) is not in the generated protos "
                    + "(imports from other folders and well-known types are not supported)")
        }
        return type
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

/// The Swift spelling of a proto type name (protobuf type names are already UpperCamel).
func swiftTypeName(_ name: String) -> String {
    name
}
