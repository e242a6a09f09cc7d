import DBusValues

/// A type a method handler takes an argument as, decoded from the call's arguments (already
/// checked against the method's declared signature, so a mismatch is `InvalidArgs` rather than
/// a crash): `String`, `Bool`, `UInt32`, `UInt64`, `Int64`, ``ObjectPath``, ``DBusValue`` (any value; a
/// variant's content), arrays of these, and string-keyed dictionaries of them.
protocol DBusArgument {
    /// The argument in `value`; nil when `value` is of another type.
    init?(dbusValue value: DBusValue)
}

/// An object path argument (`o`), apart from a string (`s`).
struct ObjectPath: DBusArgument, Hashable {
    /// The path.
    var path: String

    init?(dbusValue value: DBusValue) {
        guard let path = value.objectPath else { return nil }
        self.path = path
    }
}

/// A file descriptor argument (`h`): its index among the descriptors the message carries.
struct DescriptorIndex: DBusArgument {
    /// The index.
    var index: Int32

    init?(dbusValue value: DBusValue) {
        guard case .fileDescriptorIndex(let index) = value else { return nil }
        self.index = index
    }
}

extension String: DBusArgument {
    init?(dbusValue value: DBusValue) {
        guard let string = value.string else { return nil }
        self = string
    }
}

extension Bool: DBusArgument {
    init?(dbusValue value: DBusValue) {
        guard let boolean = value.boolean else { return nil }
        self = boolean
    }
}

extension UInt32: DBusArgument {
    init?(dbusValue value: DBusValue) {
        guard let number = value.uint32 else { return nil }
        self = number
    }
}

extension UInt64: DBusArgument {
    init?(dbusValue value: DBusValue) {
        guard let number = value.uint64 else { return nil }
        self = number
    }
}

extension Int64: DBusArgument {
    init?(dbusValue value: DBusValue) {
        guard case .int64(let number) = value else { return nil }
        self = number
    }
}

extension DBusValue: DBusArgument {
    /// Any value as it is; a variant (`v`) as its content.
    init?(dbusValue value: DBusValue) {
        self = value.variant ?? value
    }
}

extension Array: DBusArgument where Element: DBusArgument {
    init?(dbusValue value: DBusValue) {
        guard case .array(_, let items) = value else { return nil }
        var decoded: [Element] = []
        decoded.reserveCapacity(items.count)
        for item in items {
            guard let element = Element(dbusValue: item) else { return nil }
            decoded.append(element)
        }
        self = decoded
    }
}

extension Dictionary: DBusArgument where Key == String, Value: DBusArgument {
    init?(dbusValue value: DBusValue) {
        guard case .dictionary("s", _, let entries) = value else { return nil }
        var decoded: [String: Value] = [:]
        for entry in entries {
            guard let key = entry.key.string, let element = Value(dbusValue: entry.value) else { return nil }
            decoded[key] = element
        }
        self = decoded
    }
}
