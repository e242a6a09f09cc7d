/// secretctl's `--json` output, written without Foundation's JSONSerialization (secretctl links
/// FoundationEssentials only): compact, keys sorted, `/` not escaped, non-ASCII as UTF-8.
enum JSONText {
    /// `value` as JSON: `[String: Any?]` (nil is null), `[Any]`, `String`, `Bool`, `Int`;
    /// nil for anything else.
    static func encode(_ value: Any?) -> String? {
        var text = ""
        return write(value, to: &text) ? text : nil
    }

    private static func write(_ value: Any?, to text: inout String) -> Bool {
        switch unwrapped(value) {
        case nil:
            text += "null"
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
            return false
        }
        return true
    }

    /// `value` without the optionals wrapped around it (an `Int?` held in an `Any`, say).
    private static func unwrapped(_ value: Any?) -> Any? {
        guard let value else { return nil }
        let mirror = Mirror(reflecting: value)
        guard mirror.displayStyle == .optional else { return value }
        return mirror.children.first.flatMap { unwrapped($0.value) }
    }

    private static func writeString(_ string: String, to text: inout String) {
        text += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case "\u{08}": text += "\\b"
            case "\u{0C}": text += "\\f"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: text.unicodeScalars.append(scalar)
            }
        }
        text += "\""
    }
}
