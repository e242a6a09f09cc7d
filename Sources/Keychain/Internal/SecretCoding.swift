import FoundationEssentials

/// Conversions between the caller's values and the bytes stored as secrets.
enum SecretCoding {
    /// Content type of text secrets (what `secret-tool` and Python keyring write).
    static let textType = "text/plain"
    /// Content type of raw bytes.
    static let binaryType = "application/octet-stream"
    /// Content type of `Codable` values, stored as JSON.
    static let jsonType = "application/json"

    // MARK: - To bytes

    /// A wiped-on-release copy of `string`'s UTF-8 bytes.
    static func buffer(_ string: String) throws(KeychainError) -> SecretBuffer {
        try Validation.secretSize(string.utf8.count)
        var copy = string
        return copy.withUTF8 { SecretBuffer(copying: UnsafeRawBufferPointer($0)) }
    }

    /// A wiped-on-release copy of `data`.
    static func buffer(_ data: Data) throws(KeychainError) -> SecretBuffer {
        try Validation.secretSize(data.count)
        return data.withUnsafeBytes { SecretBuffer(copying: $0) }
    }

    /// `value` encoded as JSON in a wiped-on-release buffer; the intermediate copy is wiped too.
    static func buffer<T: Encodable>(encoding value: T) throws(KeychainError) -> SecretBuffer {
        var json: Data
        do {
            json = try JSONEncoder().encode(value)
        } catch {
            throw .invalidInput(.notEncodable(field: "value"))
        }
        defer { SecretBuffer.wipe(&json) }
        return try buffer(json)
    }

    // MARK: - From bytes

    /// The bytes as text; non-UTF-8 bytes are an error rather than being repaired.
    static func string(_ bytes: UnsafeRawBufferPointer) throws(KeychainError) -> String {
        guard let text = String(validating: bytes.bindMemory(to: UInt8.self), as: UTF8.self) else {
            throw .unexpectedData(reason: "the stored value is not UTF-8 text")
        }
        return text
    }

    /// The bytes as `Data`.
    static func data(_ bytes: UnsafeRawBufferPointer) -> Data {
        Data(bytes)
    }

    /// The bytes decoded from JSON as `T`; the error names the type and coding path, never a value.
    static func decode<T: Decodable>(_ type: T.Type, from bytes: UnsafeRawBufferPointer) throws(KeychainError) -> T {
        var json = Data(bytes)
        defer { SecretBuffer.wipe(&json) }
        do {
            return try JSONDecoder().decode(T.self, from: json)
        } catch let error as DecodingError {
            throw .unexpectedData(reason: "the stored value does not decode as \(T.self): \(summary(error))")
        } catch {
            throw .unexpectedData(reason: "the stored value does not decode as \(T.self)")
        }
    }

    /// A description of a decoding error that keeps the coding path and drops any quoted data.
    private static func summary(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let keys = context.codingPath.map(\.stringValue).joined(separator: ".")
            return keys.isEmpty ? "at the top level" : "at \(keys)"
        }
        switch error {
        case .typeMismatch(let type, let context): return "expected \(type) \(path(context))"
        case .valueNotFound(let type, let context): return "missing \(type) \(path(context))"
        case .keyNotFound(let key, let context): return "missing key '\(key.stringValue)' \(path(context))"
        case .dataCorrupted(let context): return "not valid JSON \(path(context))"
        @unknown default: return "not decodable"
        }
    }
}
