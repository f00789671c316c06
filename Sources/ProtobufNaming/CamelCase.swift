/// `snake_case` → `camelCase`, as Swift properties are usually spelled (`user_id` → `userId`):
/// the letter after each underscore is uppercased, underscores are dropped, a leading one is
/// ignored.
///
/// One rule for both sides of a protobuf model: `courier-protobuf-gen` names the generated
/// properties with it, and `CourierProtobuf` finds a hand-written `Codable` model's properties
/// with it. (A target of its own, without dependencies, so that the generator links nothing.)
public func camelCase(_ name: String) -> String {
    guard name.contains("_") else { return name }
    var result = ""
    var upperNext = false
    for character in name {
        if character == "_" {
            upperNext = !result.isEmpty
            continue
        }
        if upperNext {
            result += character.uppercased()
            upperNext = false
        } else {
            result.append(character)
        }
    }
    return result
}
