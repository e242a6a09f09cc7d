// Reading an export's JSON payload (`{"items": [{"label", "attributes", "secret"}]}`) byte by
// byte: what JSONDecoder made of it took 0.8 s for 100,000 items before the first could be
// sent, and built a tree of the whole payload first (issue 51, point 6).

import FoundationEssentials

extension ExportFile {
    /// Reads the payload ``json(_:)`` writes, and any JSON (RFC 8259) of its shape, as
    /// JSONDecoder read it before: whitespace anywhere, keys in any order, every string escape,
    /// members it does not know (skipped), the first of a repeated member. Anything else is an
    /// error (``PayloadReader/Malformed``), also what is not JSON though JSONDecoder let it
    /// by (a trailing comma, `01`).
    struct PayloadReader {
        /// Why a payload does not read.
        struct Malformed: Error {}

        private let bytes: UnsafeRawBufferPointer
        private var position = 0

        /// A reader of `bytes`, which must outlive it.
        init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

        /// The items of the payload; the whole of it must be one object.
        mutating func items() throws(Malformed) -> [Item] {
            var items: [Item]?
            try object { reader, key throws(Malformed) in
                if key == "items", items == nil { items = try reader.array { reader throws(Malformed) in try reader.item() } } else { try reader.skipValue() }
            }
            skipWhitespace()
            guard position == bytes.count, let items else { throw Malformed() }
            return items
        }

        private mutating func item() throws(Malformed) -> Item {
            var label: String?
            var attributes: [String: String]?
            var secret: Data?
            try object { reader, key throws(Malformed) in
                switch key {
                case "label" where label == nil: label = try reader.string()
                case "attributes" where attributes == nil:
                    var map: [String: String] = [:]
                    try reader.object { reader, name throws(Malformed) in
                        let value = try reader.string()
                        if map[name] == nil { map[name] = value }
                    }
                    attributes = map
                case "secret" where secret == nil:
                    guard let decoded = Data(base64Encoded: try reader.string()) else { throw Malformed() }
                    secret = decoded
                default: try reader.skipValue()
                }
            }
            guard let label, let attributes, let secret else { throw Malformed() }
            return Item(label: label, attributes: attributes, secret: secret)
        }

        // MARK: - JSON

        /// An object: `member` is called with each key, the reader at its value, which it reads.
        private mutating func object(_ member: (inout PayloadReader, String) throws(Malformed) -> Void) throws(Malformed) {
            try expect(UInt8(ascii: "{"))
            if try peek() == UInt8(ascii: "}") { return position += 1 }
            while true {
                let key = try string()
                try expect(UInt8(ascii: ":"))
                try member(&self, key)
                switch try next() {
                case UInt8(ascii: ","): continue
                case UInt8(ascii: "}"): return
                default: throw Malformed()
                }
            }
        }

        /// An array, each element read by `element`.
        private mutating func array<Element>(_ element: (inout PayloadReader) throws(Malformed) -> Element) throws(Malformed) -> [Element] {
            try expect(UInt8(ascii: "["))
            var elements: [Element] = []
            if try peek() == UInt8(ascii: "]") {
                position += 1
                return elements
            }
            while true {
                elements.append(try element(&self))
                switch try next() {
                case UInt8(ascii: ","): continue
                case UInt8(ascii: "]"): return elements
                default: throw Malformed()
                }
            }
        }

        /// A string, its escapes undone; it must be UTF-8.
        private mutating func string() throws(Malformed) -> String {
            try expect(UInt8(ascii: "\""))
            let start = position
            // Most strings have no escape: taken as they are.
            while position < bytes.count, bytes[position] != UInt8(ascii: "\""), bytes[position] != UInt8(ascii: "\\") {
                guard bytes[position] >= 0x20 else { throw Malformed() }
                position += 1
            }
            var text = Array(bytes[start..<position])
            while true {
                guard position < bytes.count else { throw Malformed() }
                let byte = bytes[position]
                position += 1
                switch byte {
                case UInt8(ascii: "\""):
                    guard let decoded = String(validating: text, as: UTF8.self) else { throw Malformed() }
                    return decoded
                case UInt8(ascii: "\\"): try unescape(into: &text)
                case ..<0x20: throw Malformed()
                default: text.append(byte)
                }
            }
        }

        /// The escape after a backslash, appended to `text` as UTF-8.
        private mutating func unescape(into text: inout [UInt8]) throws(Malformed) {
            guard position < bytes.count else { throw Malformed() }
            let byte = bytes[position]
            position += 1
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): text.append(byte)
            case UInt8(ascii: "b"): text.append(0x08)
            case UInt8(ascii: "f"): text.append(0x0C)
            case UInt8(ascii: "n"): text.append(0x0A)
            case UInt8(ascii: "r"): text.append(0x0D)
            case UInt8(ascii: "t"): text.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = UInt32(try hex4())
                if (0xD800..<0xDC00).contains(scalar) {  // a high surrogate: its low one must follow
                    guard position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"), bytes[position + 1] == UInt8(ascii: "u") else {
                        throw Malformed()
                    }
                    position += 2
                    let low = UInt32(try hex4())
                    guard (0xDC00..<0xE000).contains(low) else { throw Malformed() }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                }
                guard let unicode = Unicode.Scalar(scalar) else { throw Malformed() }
                text += Array(String(Character(unicode)).utf8)
            default: throw Malformed()
            }
        }

        /// Four hexadecimal digits.
        private mutating func hex4() throws(Malformed) -> UInt16 {
            guard position + 4 <= bytes.count else { throw Malformed() }
            var value: UInt16 = 0
            for _ in 0..<4 {
                let byte = bytes[position]
                position += 1
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: throw Malformed()
                }
                value = value << 4 | UInt16(digit)
            }
            return value
        }

        /// Any value, read and dropped (a member this reader does not know).
        private mutating func skipValue() throws(Malformed) {
            switch try peek() {
            case UInt8(ascii: "{"): try object { reader, _ throws(Malformed) in try reader.skipValue() }
            case UInt8(ascii: "["): _ = try array { reader throws(Malformed) in try reader.skipValue() }
            case UInt8(ascii: "\""): _ = try string()
            case UInt8(ascii: "t"): try literal("true")
            case UInt8(ascii: "f"): try literal("false")
            case UInt8(ascii: "n"): try literal("null")
            default: try number()
            }
        }

        /// `word`, exactly.
        private mutating func literal(_ word: StaticString) throws(Malformed) {
            let count = word.utf8CodeUnitCount
            guard position + count <= bytes.count else { throw Malformed() }
            for index in 0..<count where bytes[position + index] != word.utf8Start[index] { throw Malformed() }
            position += count
        }

        /// A number as JSON writes one: `-`? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
        private mutating func number() throws(Malformed) {
            func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
            func digits() throws(Malformed) {
                guard position < bytes.count, isDigit(bytes[position]) else { throw Malformed() }
                while position < bytes.count, isDigit(bytes[position]) { position += 1 }
            }
            if position < bytes.count, bytes[position] == UInt8(ascii: "-") { position += 1 }
            if position < bytes.count, bytes[position] == UInt8(ascii: "0") { position += 1 } else { try digits() }
            if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
                position += 1
                try digits()
            }
            if position < bytes.count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
                position += 1
                if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") { position += 1 }
                try digits()
            }
        }

        /// The next byte that is not whitespace, without taking it.
        private mutating func peek() throws(Malformed) -> UInt8 {
            skipWhitespace()
            guard position < bytes.count else { throw Malformed() }
            return bytes[position]
        }

        /// The next byte that is not whitespace, taken.
        private mutating func next() throws(Malformed) -> UInt8 {
            let byte = try peek()
            position += 1
            return byte
        }

        /// Takes `byte`, after any whitespace; anything else is an error.
        private mutating func expect(_ byte: UInt8) throws(Malformed) {
            guard try next() == byte else { throw Malformed() }
        }

        private mutating func skipWhitespace() {
            while position < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[position]) { position += 1 }
        }
    }
}
