// The bridge between DBusValue and GLib's GVariant: the only file of DBusValues that calls GLib.

internal import CGio

extension DBusValue {
    /// Builds a (floating) GVariant from a value.
    package static func makeVariant(_ value: DBusValue) -> OpaquePointer {
        switch value {
        case .boolean(let flag): return g_variant_new_boolean(flag ? 1 : 0)
        case .byte(let number): return g_variant_new_byte(number)
        case .int16(let number): return g_variant_new_int16(number)
        case .uint16(let number): return g_variant_new_uint16(number)
        case .double(let number): return g_variant_new_double(number)
        case .signature(let text): return g_variant_new_signature(text)
        case .fileDescriptorIndex(let index): return g_variant_new_handle(index)
        case .uint32(let number): return g_variant_new_uint32(number)
        case .int32(let number): return g_variant_new_int32(number)
        case .uint64(let number): return g_variant_new_uint64(guint64(number))
        case .int64(let number): return g_variant_new_int64(gint64(number))
        case .string(let text): return g_variant_new_string(text)
        case .objectPath(let path): return g_variant_new_object_path(path)
        case .bytes(let bytes):
            return withType("y") { type in
                bytes.withUnsafeBytes { g_variant_new_fixed_array(type, $0.baseAddress, gsize($0.count), 1) }
            }
        case .array(let element, let items):
            let children = items.map { Optional(makeVariant($0)) }
            return withType(element) { type in
                children.withUnsafeBufferPointer { g_variant_new_array(type, $0.baseAddress, gsize($0.count)) }
            }
        case .dictionary(let key, let valueType, let entries):
            let children: [OpaquePointer?] = entries.map { g_variant_new_dict_entry(makeVariant($0.key), makeVariant($0.value)) }
            return withType("{\(key)\(valueType)}") { type in
                children.withUnsafeBufferPointer { g_variant_new_array(type, $0.baseAddress, gsize($0.count)) }
            }
        case .tuple(let items):
            let children = items.map { Optional(makeVariant($0)) }
            return children.withUnsafeBufferPointer { g_variant_new_tuple($0.baseAddress, gsize($0.count)) }
        case .variant(let inner): return g_variant_new_variant(makeVariant(inner))
        }
    }

    /// Builds a (floating) tuple of `values` followed by `prebuilt`: floating GVariants made
    /// elsewhere, such as a secret libsecret encoded for its session (which never becomes a
    /// Swift value), taken over by the tuple; or held ones, which the tuple references.
    package static func makeTuple(_ values: [DBusValue], appending prebuilt: [OpaquePointer] = []) -> OpaquePointer {
        let children = values.map { Optional(makeVariant($0)) } + prebuilt.map { Optional($0) }
        return children.withUnsafeBufferPointer { g_variant_new_tuple($0.baseAddress, gsize($0.count)) }
    }

    /// `variant` (not consumed) in GVariant's text format with type annotations, as `gdbus call`
    /// prints it (`('/org/freedesktop/secrets/collection/login/1', objectpath '/')`).
    package static func text(of variant: OpaquePointer) -> String {
        let text = g_variant_print(variant, 1)!
        defer { g_free(text) }
        return String(cString: text)
    }

    /// A floating GVariant parsed from GVariant's text format, as `gdbus call` takes arguments
    /// (`"('plain', <''>)"`), for tests that send values of any type, wrong ones included.
    /// - Throws: the parser's message when `text` is not valid.
    package static func parseText(_ text: String) throws(TextFormatError) -> OpaquePointer {
        var error: UnsafeMutablePointer<GError>?
        guard let value = g_variant_parse(nil, text, nil, nil, &error) else {
            defer { if let error { g_error_free(error) } }
            throw TextFormatError(message: error?.pointee.message.map { String(cString: $0) } ?? "invalid GVariant text")
        }
        return value
    }

    /// Text that is not in GVariant's text format.
    package struct TextFormatError: Error, CustomStringConvertible {
        /// GLib's parser message.
        package var message: String
        package var description: String { message }
    }

    /// Converts a GVariant (not consumed) into a value; nil for maybe types, which D-Bus does
    /// not have. Runs on every argument of every call, so it switches on the GVariant class
    /// and reads a type string only where an array needs it.
    package static func makeValue(_ variant: OpaquePointer) -> DBusValue? {
        switch g_variant_classify(variant) {
        case G_VARIANT_CLASS_BOOLEAN: return .boolean(g_variant_get_boolean(variant) != 0)
        case G_VARIANT_CLASS_BYTE: return .byte(g_variant_get_byte(variant))
        case G_VARIANT_CLASS_INT16: return .int16(g_variant_get_int16(variant))
        case G_VARIANT_CLASS_UINT16: return .uint16(g_variant_get_uint16(variant))
        case G_VARIANT_CLASS_DOUBLE: return .double(g_variant_get_double(variant))
        case G_VARIANT_CLASS_SIGNATURE: return .signature(String(cString: g_variant_get_string(variant, nil)))
        case G_VARIANT_CLASS_HANDLE: return .fileDescriptorIndex(g_variant_get_handle(variant))
        case G_VARIANT_CLASS_UINT32: return .uint32(g_variant_get_uint32(variant))
        case G_VARIANT_CLASS_INT32: return .int32(g_variant_get_int32(variant))
        case G_VARIANT_CLASS_UINT64: return .uint64(UInt64(g_variant_get_uint64(variant)))
        case G_VARIANT_CLASS_INT64: return .int64(Int64(g_variant_get_int64(variant)))
        case G_VARIANT_CLASS_STRING: return .string(String(cString: g_variant_get_string(variant, nil)))
        case G_VARIANT_CLASS_OBJECT_PATH: return .objectPath(String(cString: g_variant_get_string(variant, nil)))
        case G_VARIANT_CLASS_VARIANT:
            let inner = g_variant_get_variant(variant)!
            defer { g_variant_unref(inner) }
            return makeValue(inner).map { .variant($0) }
        case G_VARIANT_CLASS_TUPLE, G_VARIANT_CLASS_DICT_ENTRY:
            return children(of: variant).map { .tuple($0) }
        case G_VARIANT_CLASS_ARRAY:
            let element = g_variant_get_type_string(variant)! + 1  // after the "a"
            if element.pointee == CChar(UInt8(ascii: "y")) {
                var count: gsize = 0
                guard let base = g_variant_get_fixed_array(variant, &count, 1), count > 0 else { return .bytes(DBusBytes([])) }
                return .bytes(DBusBytes(copying: UnsafeRawBufferPointer(start: base, count: Int(count))))
            }
            guard let values = children(of: variant) else { return nil }
            guard element.pointee == CChar(UInt8(ascii: "{")) else { return .array(element: String(cString: element), values) }
            let entryType = String(cString: element)  // "{" key value "}", the key one character
            let entries = values.compactMap { value -> DBusValue.Entry? in
                guard case .tuple(let pair) = value, pair.count == 2 else { return nil }
                return DBusValue.Entry(key: pair[0], value: pair[1])
            }
            return .dictionary(key: String(entryType.dropFirst().prefix(1)), value: String(entryType.dropFirst(2).dropLast()), entries)
        default:
            return nil
        }
    }

    /// The converted children of a container, or nil if one cannot be converted.
    private static func children(of variant: OpaquePointer) -> [DBusValue]? {
        let count = g_variant_n_children(variant)
        var values: [DBusValue] = []
        values.reserveCapacity(Int(count))
        for index in 0..<count {
            let child = g_variant_get_child_value(variant, index)!
            defer { g_variant_unref(child) }
            guard let value = makeValue(child) else { return nil }
            values.append(value)
        }
        return values
    }

    private static func withType(_ signature: String, _ body: (OpaquePointer) -> OpaquePointer) -> OpaquePointer {
        let type = g_variant_type_new(signature)!
        defer { g_variant_type_free(type) }
        return body(type)
    }
}
