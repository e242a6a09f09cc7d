/// A GLib key file (`[group]` headers, `key=value` lines, `#` comments), as gnome-keyring writes
/// a keyring without a password; read the way GLib's `GKeyFile` reads one.
struct KeyFile {
    /// The groups in the file's order, each with its entries (raw values, not unescaped).
    private(set) var groups: [(name: String, entries: [String: String])] = []

    /// Parses `text`; a line that is neither a comment, a group header nor an entry, or an
    /// entry before the first group, is damage.
    init(_ text: String) throws(GnomeKeyringError) {
        for rawLine in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = rawLine.hasSuffix("\r") ? rawLine.dropLast() : rawLine[...]
            let trimmed = line.drop { $0 == " " || $0 == "\t" }
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            if trimmed.hasPrefix("[") {
                guard trimmed.hasSuffix("]"), trimmed.count >= 2 else { throw .damaged("a bad group header") }
                groups.append((String(trimmed.dropFirst().dropLast()), [:]))
                continue
            }
            guard let equals = line.firstIndex(of: "="), !groups.isEmpty else { throw .damaged("a line that is not an entry") }
            var key = line[..<equals]
            while key.last == " " || key.last == "\t" { key = key.dropLast() }
            let value = line[line.index(after: equals)...].drop { $0 == " " || $0 == "\t" }
            // A key with a locale (`name[de]`) is a translation, which keyrings do not have.
            guard !key.contains("[") else { continue }
            groups[groups.count - 1].entries[String(key)] = String(value)
        }
    }

    /// The entries of `group` (the first group of that name).
    func group(_ name: String) -> [String: String]? {
        groups.first { $0.name == name }?.entries
    }

    /// A value with GLib's escapes undone (`\s` `\n` `\t` `\r` `\\`), as `g_key_file_get_string`.
    static func unescape(_ value: String) throws(GnomeKeyringError) -> String {
        guard value.contains("\\") else { return value }
        var result = ""
        var escaping = false
        for character in value {
            if escaping {
                switch character {
                case "s": result.append(" ")
                case "n": result.append("\n")
                case "t": result.append("\t")
                case "r": result.append("\r")
                case "\\": result.append("\\")
                default: throw .damaged("an unknown escape \\\(character)")
                }
                escaping = false
            } else if character == "\\" {
                escaping = true
            } else {
                result.append(character)
            }
        }
        guard !escaping else { throw .damaged("a value that ends in a backslash") }
        return result
    }
}
