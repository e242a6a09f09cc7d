/// secretctl's `--json` output, written without Foundation's JSONSerialization (secretctl links
/// FoundationEssentials only): compact, keys sorted, `/` not escaped, non-ASCII as UTF-8.
enum JSONText {
    /// `value` as JSON: `[String: Any?]` (nil is null), `[Any]`, `String`, `Bool`, `Int`;
    /// nil for anything else.
    static func encode(_ value: Any?) -> String? {
        var text = ""
        return write(value, to: &text) ? text : nil
    }

    /// Writes `value` as JSON to `text`; false for a value JSON has no form for. The usual
    /// types are tried first; only what none of them is gets reflected (`Mirror`, slow: it was
    /// a tenth of `list --json`), to find an optional held in the `Any`.
    private static func write(_ value: Any?, to text: inout String) -> Bool {
        guard let value else {
            text += "null"
            return true
        }
        switch value {
        case let flag as Bool:
            text += flag ? "true" : "false"
        case let number as Int:
            text += String(number)
        case let string as String:
            writeString(string, to: &text)
        case let object as [String: Any?]:
            text += "{"
            for (index, key) in object.keys.sorted().enumerated() {
                if index > 0 { text += "," }
                writeString(key, to: &text)
                text += ":"
                guard write(object[key]!, to: &text) else { return false }
            }
            text += "}"
        case let object as [String: String]:
            return write(object.mapValues { Optional<Any>($0) }, to: &text)
        case let array as [Any]:
            text += "["
            for (index, element) in array.enumerated() {
                if index > 0 { text += "," }
                guard write(element, to: &text) else { return false }
            }
            text += "]"
        default:
            // An optional inside the `Any` (an `Int?` that is nil, say): null, or what it holds.
            let mirror = Mirror(reflecting: value)
            guard mirror.displayStyle == .optional else { return false }
            return write(mirror.children.first?.value, to: &text)
        }
        return true
    }

    /// `string` as a JSON string, appended to `text` (``appendQuoted(_:to:)``).
    private static func writeString(_ string: String, to text: inout String) {
        guard string.utf8.contains(where: { escapes[Int($0)] != nil }) else {
            text += "\""
            text += string
            text += "\""
            return
        }
        var bytes: [UInt8] = []
        appendQuoted(string, to: &bytes)
        text += String(decoding: bytes, as: UTF8.self)
    }

    /// `text` as a JSON string, quotes included, appended to `out`: `"` and `\\` escaped,
    /// control characters as `\b`, `\t`, `\n`, `\f`, `\r` or `\u00XX`, the rest (UTF-8) as
    /// it is. The one rule for every JSON secretctl writes: `--json` output and the export's payload.
    static func appendQuoted(_ text: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            if let escaped = escapes[Int(byte)] { out += escaped } else { out.append(byte) }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// How many bytes ``appendQuoted(_:to:)`` writes for `text`.
    static func quotedLength(_ text: String) -> Int {
        var length = 2
        for byte in text.utf8 { length += escapes[Int(byte)]?.count ?? 1 }
        return length
    }

    /// How a JSON string writes each byte of UTF-8: nil when as itself.
    private static let escapes: [[UInt8]?] = (0..<256).map { (byte: Int) -> [UInt8]? in
        switch byte {
        case 0x22: return Array(#"\""#.utf8)
        case 0x5C: return Array(#"\\"#.utf8)
        case 0x08: return Array(#"\b"#.utf8)
        case 0x09: return Array(#"\t"#.utf8)
        case 0x0A: return Array(#"\n"#.utf8)
        case 0x0C: return Array(#"\f"#.utf8)
        case 0x0D: return Array(#"\r"#.utf8)
        case ..<0x20:
            let hex = Array("0123456789abcdef".utf8)
            return Array(#"\u00"#.utf8) + [hex[byte >> 4], hex[byte & 0xf]]
        default: return nil
        }
    }
}
