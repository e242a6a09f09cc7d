/// A small XML reader, enough for a KeePass database's payload (``KDBXImport``) and KeePass's
/// XML key files: elements, attributes, character data with the five named entities and
/// character references, CDATA sections; the declaration, comments and processing
/// instructions are skipped. A document type declaration is refused (KeePass writes none, and
/// entity definitions are a way to blow up). Not a general XML parser: namespaces are not
/// resolved and the encoding is UTF-8.
///
/// FoundationXML is not used: it would load all of Foundation and libxml2 into secretctl,
/// which otherwise links only FoundationEssentials.
struct XMLReader {
    /// One element: its name, attributes, the character data directly inside it, and the
    /// elements inside it in document order.
    struct Element {
        var name: String
        var attributes: [String: String] = [:]
        var text = ""
        var children: [Element] = []

        /// The first child called `name`.
        func child(_ name: String) -> Element? { children.first { $0.name == name } }

        /// The children called `name`.
        func children(_ name: String) -> [Element] { children.filter { $0.name == name } }
    }

    /// Why a document was refused: where, and what was found there.
    struct Failure: Error, Equatable {
        var offset: Int
        var reason: String
    }

    /// The deepest nesting read (KeePass nests groups; thousands of levels are an attack).
    static let maximumDepth = 512

    private let bytes: [UInt8]
    private var position = 0

    private init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// The root element of the UTF-8 document `bytes`.
    static func parse(_ bytes: [UInt8]) throws(Failure) -> Element {
        var reader = XMLReader(bytes)
        return try reader.document()
    }

    // MARK: - Grammar

    private mutating func document() throws(Failure) -> Element {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { position = 3 }
        var stack: [Element] = []
        var root: Element?
        while position < bytes.count {
            if bytes[position] != UInt8(ascii: "<") {
                let text = try characterData()
                if stack.isEmpty {
                    // By scalars: "\r\n" is one Character, equal to neither "\r" nor "\n".
                    guard text.unicodeScalars.allSatisfy({ [" ", "\n", "\r", "\t"].contains($0) }) else { throw fail("text outside the root element") }
                } else {
                    stack[stack.count - 1].text += text
                }
                continue
            }
            if skip("<?") {
                try skipPast("?>")
            } else if skip("<!--") {
                try skipPast("-->")
            } else if skip("<![CDATA[") {
                let start = position
                try skipPast("]]>")
                guard !stack.isEmpty else { throw fail("CDATA outside the root element") }
                stack[stack.count - 1].text += String(decoding: bytes[start..<(position - 3)], as: UTF8.self)
            } else if skip("<!") {
                throw fail("a document type declaration")
            } else if skip("</") {
                let name = try self.name()
                skipSpace()
                guard skip(">") else { throw fail("a malformed end tag") }
                guard let open = stack.popLast(), open.name == name else { throw fail("an end tag that does not match") }
                if stack.isEmpty {
                    root = open
                    break
                }
                stack[stack.count - 1].children.append(open)
            } else {
                position += 1
                guard root == nil else { throw fail("a second root element") }
                var element = Element(name: try name())
                while true {
                    skipSpace()
                    if skip("/>") {
                        if stack.isEmpty {
                            root = element
                        } else {
                            stack[stack.count - 1].children.append(element)
                        }
                        break
                    }
                    if skip(">") {
                        guard stack.count < Self.maximumDepth else { throw fail("elements nested too deep") }
                        stack.append(element)
                        break
                    }
                    let attribute = try name()
                    skipSpace()
                    guard skip("=") else { throw fail("an attribute without a value") }
                    skipSpace()
                    guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") || bytes[position] == UInt8(ascii: "'") else {
                        throw fail("an attribute value without quotes")
                    }
                    let quote = bytes[position]
                    position += 1
                    element.attributes[attribute] = try characterData(until: quote)
                    position += 1
                }
                if root != nil && stack.isEmpty { break }
            }
        }
        guard let root else { throw fail(stack.isEmpty ? "no root element" : "the document ends inside an element") }
        // Only white space, comments and processing instructions may follow.
        while position < bytes.count {
            if skip("<!--") {
                try skipPast("-->")
            } else if skip("<?") {
                try skipPast("?>")
            } else if [0x20, 0x0A, 0x0D, 0x09].contains(bytes[position]) {
                position += 1
            } else {
                throw fail("content after the root element")
            }
        }
        return root
    }

    private mutating func name() throws(Failure) -> String {
        let start = position
        while position < bytes.count {
            let byte = bytes[position]
            if byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 || byte == UInt8(ascii: ">") || byte == UInt8(ascii: "/")
                || byte == UInt8(ascii: "=") || byte == UInt8(ascii: "<") || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'")
            {
                break
            }
            position += 1
        }
        guard position > start else { throw fail("a missing name") }
        return String(decoding: bytes[start..<position], as: UTF8.self)
    }

    /// Text up to the next `<` (or the closing `quote` of an attribute value), references
    /// replaced.
    private mutating func characterData(until quote: UInt8? = nil) throws(Failure) -> String {
        var result: [UInt8] = []
        while position < bytes.count {
            let byte = bytes[position]
            if let quote, byte == quote { return String(decoding: result, as: UTF8.self) }
            if byte == UInt8(ascii: "<") {
                guard quote == nil else { throw fail("'<' in an attribute value") }
                return String(decoding: result, as: UTF8.self)
            }
            if byte == UInt8(ascii: "&") {
                result += try reference()
            } else {
                result.append(byte)
                position += 1
            }
        }
        guard quote == nil else { throw fail("an attribute value that does not end") }
        return String(decoding: result, as: UTF8.self)
    }

    private mutating func reference() throws(Failure) -> [UInt8] {
        let start = position
        guard let end = bytes[position...].prefix(12).firstIndex(of: UInt8(ascii: ";")) else { throw fail("an '&' that starts no reference") }
        let name = String(decoding: bytes[(start + 1)..<end], as: UTF8.self)
        position = end + 1
        switch name {
        case "amp": return [UInt8(ascii: "&")]
        case "lt": return [UInt8(ascii: "<")]
        case "gt": return [UInt8(ascii: ">")]
        case "quot": return [UInt8(ascii: "\"")]
        case "apos": return [UInt8(ascii: "'")]
        default:
            let value: UInt32?
            if name.hasPrefix("#x") || name.hasPrefix("#X") {
                value = UInt32(name.dropFirst(2), radix: 16)
            } else if name.hasPrefix("#") {
                value = UInt32(name.dropFirst(), radix: 10)
            } else {
                value = nil
            }
            guard let value, let scalar = Unicode.Scalar(value) else {
                position = start
                throw fail("an unknown reference")
            }
            return Array(String(Character(scalar)).utf8)
        }
    }

    // MARK: - Scanning

    private mutating func skip(_ literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard bytes.count - position >= count else { return false }
        let matches = literal.withUTF8Buffer { literal in
            (0..<count).allSatisfy { bytes[position + $0] == literal[$0] }
        }
        if matches { position += count }
        return matches
    }

    private mutating func skipPast(_ literal: StaticString) throws(Failure) {
        while position < bytes.count {
            if skip(literal) { return }
            position += 1
        }
        throw fail("the document ends inside markup")
    }

    private mutating func skipSpace() {
        while position < bytes.count, [0x20, 0x0A, 0x0D, 0x09].contains(bytes[position]) { position += 1 }
    }

    private func fail(_ reason: String) -> Failure { Failure(offset: position, reason: reason) }
}
