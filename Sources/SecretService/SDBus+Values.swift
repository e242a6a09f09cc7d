// DBusValue to and from sd-bus messages: the arguments of every call secretd receives and of
// every reply and signal it sends. Only sd-bus's functions of fixed arguments are used
// (peek_type, enter_container, read_basic, read_array, open_container, append_basic,
// append_array); Swift cannot call the variadic ones.

internal import CSystemd
import DBusValues

/// Reading and writing ``DBusValue`` in sd-bus messages.
enum SDBusValues {
    /// The values from the current position to the end of the current container (the whole
    /// body, for a message just received); nil when the message cannot be read.
    static func readAll(_ message: OpaquePointer) -> [DBusValue]? {
        var values: [DBusValue] = []
        while true {
            var type: CChar = 0
            var contents: UnsafePointer<CChar>?
            let more = sd_bus_message_peek_type(message, &type, &contents)
            if more < 0 { return nil }
            if more == 0 { return values }
            guard let value = read(message, type: UInt8(bitPattern: type), contents: contents) else { return nil }
            values.append(value)
        }
    }

    /// What a message's arguments take: strings and byte arrays by their length, every other
    /// value as 8 bytes. It reads the body from its start, then rewinds the message to its start
    /// again, as received; a body it cannot read counts what was read up to there (``readAll(_:)``
    /// then refuses the call). It stops once the count reaches `limit`, and returns that count:
    /// a large call's many small values are not all walked on the main loop.
    static func payloadSize(_ message: OpaquePointer, upTo limit: Int = .max) -> Int {
        var total = 0
        sd_bus_message_rewind(message, 1)
        _ = addSizes(message, to: &total, upTo: limit)
        sd_bus_message_rewind(message, 1)
        return total
    }

    /// Adds the sizes of the values from the current position to the end of the current
    /// container to `total`, until it reaches `limit`; false when one cannot be read or the
    /// limit was reached.
    private static func addSizes(_ message: OpaquePointer, to total: inout Int, upTo limit: Int) -> Bool {
        while total < limit {
            var type: CChar = 0
            var contents: UnsafePointer<CChar>?
            let more = sd_bus_message_peek_type(message, &type, &contents)
            if more <= 0 { return more == 0 }
            switch UInt8(bitPattern: type) {
            case UInt8(ascii: "a") where contents.map({ String(cString: $0) }) == "y":
                var bytes: UnsafeRawPointer?
                var count = 0
                guard sd_bus_message_read_array(message, CChar(UInt8(ascii: "y")), &bytes, &count) >= 0 else { return false }
                total += count
            case UInt8(ascii: "a"), UInt8(ascii: "r"), UInt8(ascii: "v"), UInt8(ascii: "e"):
                guard sd_bus_message_enter_container(message, type, contents) >= 0, addSizes(message, to: &total, upTo: limit),
                    sd_bus_message_exit_container(message) >= 0
                else { return false }
            case UInt8(ascii: "s"), UInt8(ascii: "o"), UInt8(ascii: "g"):
                var text: UnsafePointer<CChar>?
                guard sd_bus_message_read_basic(message, type, &text) > 0, let text else { return false }
                total += strlen(text)
            default:
                var storage: (UInt64, UInt64) = (0, 0)
                let read = withUnsafeMutableBytes(of: &storage) { sd_bus_message_read_basic(message, type, $0.baseAddress) }
                guard read > 0 else { return false }
                total += 8
            }
        }
        return false
    }

    /// The next value, whose type `peek_type` gave.
    private static func read(_ message: OpaquePointer, type: UInt8, contents: UnsafePointer<CChar>?) -> DBusValue? {
        switch type {
        case UInt8(ascii: "a"):
            guard let contents else { return nil }
            let element = String(cString: contents)
            if element == "y" {
                var bytes: UnsafeRawPointer?
                var count = 0
                guard sd_bus_message_read_array(message, CChar(UInt8(ascii: "y")), &bytes, &count) >= 0 else { return nil }
                guard let bytes, count > 0 else { return .bytes(DBusBytes([])) }
                return .bytes(DBusBytes(copying: UnsafeRawBufferPointer(start: bytes, count: count)))
            }
            guard sd_bus_message_enter_container(message, CChar(UInt8(ascii: "a")), contents) >= 0 else { return nil }
            defer { sd_bus_message_exit_container(message) }
            if element.hasPrefix("{") {
                let inner = element.dropFirst().dropLast()
                guard let keyType = inner.first else { return nil }
                var entries: [DBusValue.Entry] = []
                while true {
                    var entryType: CChar = 0
                    var entryContents: UnsafePointer<CChar>?
                    let more = sd_bus_message_peek_type(message, &entryType, &entryContents)
                    if more < 0 { return nil }
                    if more == 0 { break }
                    guard sd_bus_message_enter_container(message, entryType, entryContents) >= 0,
                        let pair = readAll(message), pair.count == 2
                    else { return nil }
                    sd_bus_message_exit_container(message)
                    entries.append(DBusValue.Entry(key: pair[0], value: pair[1]))
                }
                return .dictionary(key: String(keyType), value: String(inner.dropFirst()), entries)
            }
            return readAll(message).map { .array(element: element, $0) }
        case UInt8(ascii: "r"):
            guard sd_bus_message_enter_container(message, CChar(UInt8(ascii: "r")), contents) >= 0 else { return nil }
            defer { sd_bus_message_exit_container(message) }
            return readAll(message).map { .tuple($0) }
        case UInt8(ascii: "v"):
            guard sd_bus_message_enter_container(message, CChar(UInt8(ascii: "v")), contents) >= 0 else { return nil }
            defer { sd_bus_message_exit_container(message) }
            guard let inner = readAll(message), inner.count == 1 else { return nil }
            return .variant(inner[0])
        default:
            return readBasic(message, type: type)
        }
    }

    /// A value of a basic type.
    private static func readBasic(_ message: OpaquePointer, type: UInt8) -> DBusValue? {
        var storage: (UInt64, UInt64) = (0, 0)  // room for any basic value or a pointer
        let read = withUnsafeMutableBytes(of: &storage) {
            sd_bus_message_read_basic(message, CChar(bitPattern: type), $0.baseAddress)
        }
        guard read > 0 else { return nil }
        return withUnsafeBytes(of: &storage) { raw -> DBusValue? in
            switch type {
            case UInt8(ascii: "b"): return .boolean(raw.load(as: Int32.self) != 0)
            case UInt8(ascii: "y"): return .byte(raw.load(as: UInt8.self))
            case UInt8(ascii: "n"): return .int16(raw.load(as: Int16.self))
            case UInt8(ascii: "q"): return .uint16(raw.load(as: UInt16.self))
            case UInt8(ascii: "i"): return .int32(raw.load(as: Int32.self))
            case UInt8(ascii: "u"): return .uint32(raw.load(as: UInt32.self))
            case UInt8(ascii: "x"): return .int64(raw.load(as: Int64.self))
            case UInt8(ascii: "t"): return .uint64(raw.load(as: UInt64.self))
            case UInt8(ascii: "d"): return .double(raw.load(as: Double.self))
            case UInt8(ascii: "h"): return .fileDescriptorIndex(raw.load(as: Int32.self))
            case UInt8(ascii: "s"), UInt8(ascii: "o"), UInt8(ascii: "g"):
                guard let text = raw.load(as: UnsafePointer<CChar>?.self) else { return nil }
                let string = String(cString: text)
                return type == UInt8(ascii: "s") ? .string(string) : type == UInt8(ascii: "o") ? .objectPath(string) : .signature(string)
            default: return nil
            }
        }
    }

    /// Appends each of `values` at the current position; false when sd-bus refused one (a
    /// string with a NUL or an invalid object path, say).
    static func append(_ values: [DBusValue], to message: OpaquePointer) -> Bool {
        values.allSatisfy { append($0, to: message) }
    }

    private static func append(_ value: DBusValue, to message: OpaquePointer) -> Bool {
        func basic<T>(_ type: Character, _ value: T) -> Bool {
            var value = value
            return withUnsafeBytes(of: &value) { sd_bus_message_append_basic(message, CChar(type.asciiValue!), $0.baseAddress) >= 0 }
        }
        func text(_ type: Character, _ string: String) -> Bool {
            string.withCString { sd_bus_message_append_basic(message, CChar(type.asciiValue!), $0) >= 0 }
        }
        func container(_ type: Character, _ contents: String, _ body: () -> Bool) -> Bool {
            guard sd_bus_message_open_container(message, CChar(type.asciiValue!), contents) >= 0, body() else { return false }
            return sd_bus_message_close_container(message) >= 0
        }
        switch value {
        case .boolean(let flag): return basic("b", Int32(flag ? 1 : 0))
        case .byte(let number): return basic("y", number)
        case .int16(let number): return basic("n", number)
        case .uint16(let number): return basic("q", number)
        case .int32(let number): return basic("i", number)
        case .uint32(let number): return basic("u", number)
        case .int64(let number): return basic("x", number)
        case .uint64(let number): return basic("t", number)
        case .double(let number): return basic("d", number)
        case .fileDescriptorIndex(let descriptor): return basic("h", descriptor)
        case .string(let string): return text("s", string)
        case .objectPath(let path): return text("o", path)
        case .signature(let signature): return text("g", signature)
        case .bytes(let bytes):
            return bytes.withUnsafeBytes {
                sd_bus_message_append_array(message, CChar(UInt8(ascii: "y")), $0.baseAddress, $0.count) >= 0
            }
        case .array(let element, let items):
            return container("a", element) { append(items, to: message) }
        case .dictionary(let key, let valueType, let entries):
            let entry = key + valueType
            return container("a", "{\(entry)}") {
                entries.allSatisfy { pair in container("e", entry) { append(pair.key, to: message) && append(pair.value, to: message) } }
            }
        case .tuple(let items):
            return container("r", items.map(\.signature).joined()) { append(items, to: message) }
        case .variant(let inner):
            return container("v", inner.signature) { append(inner, to: message) }
        }
    }
}
