/// A D-Bus value as plain Swift data, for every part that builds or reads D-Bus messages:
/// secretd, the library beside libsecret, the test support and the benchmark. The only bridge
/// to GVariant is `DBusValue+GVariant.swift`.
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

        /// An entry of `key` and `value`.
        package init(key: DBusValue, value: DBusValue) {
            self.key = key
            self.value = value
        }
    }

    /// The D-Bus type signature of this value.
    package var signature: String {
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
    package static func objectPaths(_ paths: [String]) -> DBusValue { .array(element: "o", paths.map { .objectPath($0) }) }

    /// `a{ss}`.
    package static func stringMap(_ map: [String: String]) -> DBusValue {
        .dictionary(key: "s", value: "s", map.sorted { $0.key < $1.key }.map { Entry(key: .string($0.key), value: .string($0.value)) })
    }

    /// `a{sv}`: properties by name, each value wrapped in a variant.
    package static func properties(_ map: [String: DBusValue]) -> DBusValue {
        .dictionary(key: "s", value: "v", map.sorted { $0.key < $1.key }.map { Entry(key: .string($0.key), value: .variant($0.value)) })
    }

    /// `as`.
    package static func strings(_ strings: [String]) -> DBusValue { .array(element: "s", strings.map { .string($0) }) }

    // MARK: - Accessors (nil when the value has another type)

    package var string: String? { if case .string(let value) = self { return value } else { return nil } }
    package var objectPath: String? { if case .objectPath(let value) = self { return value } else { return nil } }
    package var boolean: Bool? { if case .boolean(let value) = self { return value } else { return nil } }
    package var uint32: UInt32? { if case .uint32(let value) = self { return value } else { return nil } }
    package var uint64: UInt64? { if case .uint64(let value) = self { return value } else { return nil } }
    package var bytes: DBusBytes? { if case .bytes(let value) = self { return value } else { return nil } }
    package var tuple: [DBusValue]? { if case .tuple(let value) = self { return value } else { return nil } }
    package var variant: DBusValue? { if case .variant(let value) = self { return value } else { return nil } }

    /// The object paths of an `ao`.
    package var objectPaths: [String]? {
        guard case .array("o", let items) = self else { return nil }
        return items.compactMap(\.objectPath)
    }

    /// The strings of an `as`.
    package var strings: [String]? {
        guard case .array("s", let items) = self else { return nil }
        return items.compactMap(\.string)
    }

    /// An `a{ss}` as a dictionary.
    package var stringMap: [String: String]? {
        guard case .dictionary("s", "s", let entries) = self else { return nil }
        var map: [String: String] = [:]
        for entry in entries {
            guard let key = entry.key.string, let value = entry.value.string else { return nil }
            map[key] = value
        }
        return map
    }

    /// An `a{sv}` as a dictionary of the unwrapped values.
    package var variantMap: [String: DBusValue]? {
        guard case .dictionary("s", "v", let entries) = self else { return nil }
        var map: [String: DBusValue] = [:]
        for entry in entries {
            guard let key = entry.key.string, let value = entry.value.variant else { return nil }
            map[key] = value
        }
        return map
    }
}
