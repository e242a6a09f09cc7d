// The export's plaintext, written without Foundation's JSONEncoder: at 100,000 items the
// encoder took a third of `secretctl export`'s time (issue 51, point 6). JSONDecoder reads it.

import FoundationEssentials

extension ExportFile {
    /// `{"items":[{"label":…,"attributes":{…},"secret":"<base64>"},…]}`, as JSONEncoder would
    /// write the payload (attributes in no particular order), in one buffer of exactly its
    /// length, so no partial copy of it is left behind by growing.
    static func json(_ items: [Item]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(jsonLength(items))
        appendJSON(items, to: &out)
        return out
    }

    /// Appends ``json(_:)`` to `out`, which has room for ``jsonLength(_:)`` more bytes (so that
    /// no partial copy of it is left behind by growing).
    static func appendJSON(_ items: [Item], to out: inout [UInt8]) {
        out += #"{"items":["#.utf8
        for (index, item) in items.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            out += #"{"label":"#.utf8
            JSONText.appendQuoted(item.label, to: &out)
            out += #","attributes":{"#.utf8
            for (position, (name, value)) in item.attributes.enumerated() {
                if position > 0 { out.append(UInt8(ascii: ",")) }
                JSONText.appendQuoted(name, to: &out)
                out.append(UInt8(ascii: ":"))
                JSONText.appendQuoted(value, to: &out)
            }
            out += #"},"secret":""#.utf8
            appendBase64(item.secret, to: &out)
            out += #""}"#.utf8
        }
        out += "]}".utf8
    }

    /// How many bytes ``json(_:)`` writes for `items`.
    static func jsonLength(_ items: [Item]) -> Int {
        var length = #"{"items":[]}"#.utf8.count + max(0, items.count - 1)
        for item in items {
            length += #"{"label":,"attributes":{},"secret":""}"#.utf8.count + JSONText.quotedLength(item.label)
                + max(0, item.attributes.count - 1) + base64Length(item.secret.count)
            for (name, value) in item.attributes { length += JSONText.quotedLength(name) + 1 + JSONText.quotedLength(value) }
        }
        return length
    }

    /// How many characters base64 (with padding) writes for `count` bytes.
    private static func base64Length(_ count: Int) -> Int { (count + 2) / 3 * 4 }

    /// The base64 alphabet (RFC 4648).
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// `bytes` in base64 with padding (RFC 4648), as JSONEncoder writes `Data`.
    private static func appendBase64(_ bytes: Data, to out: inout [UInt8]) {
        bytes.withUnsafeBytes { raw in
            var index = 0
            while index + 3 <= raw.count {
                let value = UInt32(raw[index]) << 16 | UInt32(raw[index + 1]) << 8 | UInt32(raw[index + 2])
                out += [alphabet[Int(value >> 18)], alphabet[Int(value >> 12 & 63)], alphabet[Int(value >> 6 & 63)], alphabet[Int(value & 63)]]
                index += 3
            }
            switch raw.count - index {
            case 1:
                let value = UInt32(raw[index]) << 16
                out += [alphabet[Int(value >> 18)], alphabet[Int(value >> 12 & 63)], UInt8(ascii: "="), UInt8(ascii: "=")]
            case 2:
                let value = UInt32(raw[index]) << 16 | UInt32(raw[index + 1]) << 8
                out += [alphabet[Int(value >> 18)], alphabet[Int(value >> 12 & 63)], alphabet[Int(value >> 6 & 63)], UInt8(ascii: "=")]
            default: break
            }
        }
    }
}
