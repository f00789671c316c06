import HTTPTypes

extension HTTPFields {
    /// Appends the fields whose names this list does not have yet, as the client adds its
    /// default and credential fields: a name already set is left alone, and a name repeated in
    /// `fields` keeps every value (each name is looked up before anything is appended).
    mutating func appendAbsent(_ fields: some Collection<HTTPField>) {
        guard !fields.isEmpty else { return }
        let missing = fields.filter { self[$0.name] == nil }
        append(contentsOf: missing)
    }
}
