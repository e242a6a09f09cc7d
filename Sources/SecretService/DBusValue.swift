/// A D-Bus value as plain Swift data; the only bridge to GVariant is in `GIO.swift`.
///
/// Containers carry their element signatures so empty arrays and dictionaries keep their type.
/// Every D-Bus type has a case, so any argument a client sends converts (a variant may hold
/// anything, even where the daemon only looks for strings).
package indirect enum DBusValue: Equatable {
    /// `b`.
    case boolean(Bool)
    /// `y`.
    case byte(UInt8)
    /// `n`.
    case int16(Int16)
    /// `q`.
    case uint16(UInt16)
    /// `u`.
    case uint32(UInt32)
    /// `i`.
    case int32(Int32)
    /// `t`.
    case uint64(UInt64)
    /// `x`.
    case int64(Int64)
    /// `d`.
    case double(Double)
    /// `s`.
    case string(String)
    /// `o`.
    case objectPath(String)
    /// `g`: a type signature.
    case signature(String)
    /// `h`: an index into the message's file descriptors (secretd takes none).
    case fileDescriptorIndex(Int32)
    /// `ay`, wiped when released (see ``DBusBytes``).
    case bytes(DBusBytes)
    /// `a<element>` other than `ay` and dictionaries.
    case array(element: String, [DBusValue])
    /// `a{<key><value>}`.
    case dictionary(key: String, value: String, [Entry])
    /// `(…)`.
    case tuple([DBusValue])
    /// `v`.
    case variant(DBusValue)

    /// One dictionary entry.
    package struct Entry: Equatable {
        /// The key.
        package var key: DBusValue
        /// The value.
        package var value: DBusValue
    }

    /// The D-Bus type signature of this value.
    var signature: String {
        switch self {
        case .boolean: return "b"
        case .byte: return "y"
        case .int16: return "n"
        case .uint16: return "q"
        case .double: return "d"
        case .signature: return "g"
        case .fileDescriptorIndex: return "h"
        case .uint32: return "u"
        case .int32: return "i"
        case .uint64: return "t"
        case .int64: return "x"
        case .string: return "s"
        case .objectPath: return "o"
        case .bytes: return "ay"
        case .array(let element, _): return "a" + element
        case .dictionary(let key, let value, _): return "a{\(key)\(value)}"
        case .tuple(let items): return "(" + items.map(\.signature).joined() + ")"
        case .variant: return "v"
        }
    }

    // MARK: - Convenience constructors

    /// `ao`.
    static func objectPaths(_ paths: [String]) -> DBusValue { .array(element: "o", paths.map { .objectPath($0) }) }

    /// `a{ss}`.
    static func stringMap(_ map: [String: String]) -> DBusValue {
        .dictionary(key: "s", value: "s", map.sorted { $0.key < $1.key }.map { Entry(key: .string($0.key), value: .string($0.value)) })
    }

    // MARK: - Accessors (nil when the value has another type)

    var string: String? { if case .string(let value) = self { return value } else { return nil } }
    var objectPath: String? { if case .objectPath(let value) = self { return value } else { return nil } }
    var boolean: Bool? { if case .boolean(let value) = self { return value } else { return nil } }
    var bytes: DBusBytes? { if case .bytes(let value) = self { return value } else { return nil } }
    var tuple: [DBusValue]? { if case .tuple(let value) = self { return value } else { return nil } }
    var variant: DBusValue? { if case .variant(let value) = self { return value } else { return nil } }

    /// The object paths of an `ao`.
    var objectPaths: [String]? {
        guard case .array("o", let items) = self else { return nil }
        return items.compactMap(\.objectPath)
    }

    /// An `a{ss}` as a dictionary.
    var stringMap: [String: String]? {
        guard case .dictionary("s", "s", let entries) = self else { return nil }
        var map: [String: String] = [:]
        for entry in entries {
            guard let key = entry.key.string, let value = entry.value.string else { return nil }
            map[key] = value
        }
        return map
    }

    /// An `a{sv}` as a dictionary of the unwrapped values.
    var variantMap: [String: DBusValue]? {
        guard case .dictionary("s", "v", let entries) = self else { return nil }
        var map: [String: DBusValue] = [:]
        for entry in entries {
            guard let key = entry.key.string, let value = entry.value.variant else { return nil }
            map[key] = value
        }
        return map
    }
}
