import Foundation

/// Foundation's snake-case key conversions, reimplemented to give the same keys.
enum JSONKeyConversion {
    /// `my_url_value` → `myUrlValue`; leading and trailing underscores are kept.
    static func fromSnakeCase(_ key: String) -> String {
        guard !key.isEmpty else { return key }
        guard let firstNonUnderscore = key.firstIndex(where: { $0 != "_" }) else { return key }
        var lastNonUnderscore = key.index(before: key.endIndex)
        while lastNonUnderscore > firstNonUnderscore && key[lastNonUnderscore] == "_" {
            key.formIndex(before: &lastNonUnderscore)
        }
        let keyRange = firstNonUnderscore...lastNonUnderscore
        let leading = key[key.startIndex..<firstNonUnderscore]
        let trailing = key[key.index(after: lastNonUnderscore)...]
        let components = key[keyRange].split(separator: "_")
        let joined: String
        if components.count == 1 {
            joined = String(key[keyRange])
        } else {
            joined =
                ([components[0].lowercased()] + components[1...].map { capitalized($0) }).joined()
        }
        return leading + joined + trailing
    }

    /// Foundation's own `capitalized`, as its decoder uses: a letter after a digit starts a word
    /// too (`a1b` → `A1B`), and a first letter takes its title case (`ǆ` → `ǅ`), not its upper case.
    private static func capitalized(_ word: Substring) -> String {
        word.capitalized
    }

    /// `myURLValue` → `my_url_value`, splitting words at case changes like Foundation: at its
    /// `CharacterSet.uppercaseLetters` (title case `ǅ` too) and `.lowercaseLetters`, not at every
    /// character Swift calls upper or lower case (`Ⅰ`, `Ⓐ`, `ª`).
    static func toSnakeCase(_ key: String) -> String {
        guard !key.isEmpty else { return key }
        var words: [Range<String.Index>] = []
        var wordStart = key.startIndex
        var searchRange = key.index(after: wordStart)..<key.endIndex
        while let upperCaseRange = key.rangeOfCharacter(from: .uppercaseLetters, range: searchRange) {
            let untilUpperCase = wordStart..<upperCaseRange.lowerBound
            words.append(untilUpperCase)
            searchRange = upperCaseRange.lowerBound..<searchRange.upperBound
            guard let lowerCaseRange = key.rangeOfCharacter(from: .lowercaseLetters, range: searchRange) else {
                wordStart = searchRange.lowerBound
                break
            }
            let nextCharacterAfterCapital = key.index(after: upperCaseRange.lowerBound)
            if lowerCaseRange.lowerBound == nextCharacterAfterCapital {
                wordStart = upperCaseRange.lowerBound
            } else {
                let beforeLowerIndex = key.index(before: lowerCaseRange.lowerBound)
                words.append(upperCaseRange.lowerBound..<beforeLowerIndex)
                wordStart = beforeLowerIndex
            }
            searchRange = lowerCaseRange.upperBound..<searchRange.upperBound
        }
        words.append(wordStart..<searchRange.upperBound)
        return words.map { key[$0].lowercased() }.joined(separator: "_")
    }
}
