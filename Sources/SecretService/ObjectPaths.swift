import KeychainCore

/// The object paths secretd serves; item and collection paths come from database ids and
/// names, so they stay the same across restarts.
enum ObjectPaths {
    static let service = SecretServiceNames.Path.service
    static let collectionPrefix = SecretServiceNames.Path.collectionPrefix
    static let aliasPrefix = SecretServiceNames.Path.aliasPrefix
    static let sessionPrefix = SecretServiceNames.Path.sessionPrefix
    static let promptPrefix = SecretServiceNames.Path.promptPrefix
    /// The "no prompt needed" and "no collection" path.
    static let none = SecretServiceNames.Path.none

    static func collection(_ name: String) -> String { SecretServiceNames.Path.collection(name) }
    static func item(_ collection: String, _ id: Int64) -> String { "\(collectionPrefix)/\(collection)/\(id)" }
    static func session(_ id: Int) -> String { "\(sessionPrefix)/s\(id)" }
    static func prompt(_ id: Int) -> String { "\(promptPrefix)/p\(id)" }

    /// What a path names.
    enum Target: Equatable {
        case service
        case collection(name: String)
        case alias(String)
        case item(collection: String, id: Int64)
        case session(Int)
        case prompt(Int)
        /// The desktop portal's Secret backend.
        case portal
        /// A request handle of the portal frontend's, under the backend's path.
        case portalRequest(String)
        case unknown

        /// The kind of object it names (nil: none).
        var kind: BusInterface.ObjectKind? {
            switch self {
            case .service: .service
            case .collection, .alias: .collection
            case .item: .item
            case .session: .session
            case .prompt: .prompt
            case .portal: .portal
            case .portalRequest: .portalRequest
            case .unknown: nil
            }
        }
    }

    /// Parses a path this daemon serves. Runs for nearly every call (admission, the handler's
    /// object, property reads), so it works on the UTF-8 bytes without splitting.
    static func parse(_ path: String) -> Target {
        if path.utf8.first == UInt8(ascii: "/"), path.utf8.dropFirst().first == UInt8(ascii: "o"),
            path.hasPrefix(PortalNames.path)
        {
            if path.utf8.count == PortalNames.path.utf8.count { return .portal }
            return path.dropFirst(PortalNames.path.count).hasPrefix("/request/") ? .portalRequest(path) : .unknown
        }
        var path = path
        return path.withUTF8 { bytes -> Target in
            let root = service.utf8
            guard bytes.count >= root.count, bytes.prefix(root.count).elementsEqual(root) else { return .unknown }
            if bytes.count == root.count { return .service }
            guard bytes[root.count] == UInt8(ascii: "/") else { return .unknown }
            // kind/name[/id]
            let rest = UnsafeBufferPointer(rebasing: bytes[(root.count + 1)...])
            var parts: [UnsafeBufferPointer<UInt8>] = []
            var start = rest.startIndex
            for index in rest.indices where rest[index] == UInt8(ascii: "/") {
                parts.append(UnsafeBufferPointer(rebasing: rest[start..<index]))
                start = index + 1
                if parts.count > 2 { return .unknown }
            }
            parts.append(UnsafeBufferPointer(rebasing: rest[start...]))
            guard parts.count >= 2, parts.allSatisfy({ !$0.isEmpty }) else { return .unknown }
            let kind = parts[0]
            let name = String(decoding: parts[1], as: UTF8.self)
            switch parts.count {
            case 2 where kind.elementsEqual("collection".utf8): return .collection(name: name)
            case 3 where kind.elementsEqual("collection".utf8):
                return number(parts[2]).map { .item(collection: name, id: $0) } ?? .unknown
            case 2 where kind.elementsEqual("aliases".utf8): return .alias(name)
            case 2 where kind.elementsEqual("session".utf8) && parts[1].first == UInt8(ascii: "s"):
                return number(UnsafeBufferPointer(rebasing: parts[1].dropFirst())).map { .session(Int($0)) } ?? .unknown
            case 2 where kind.elementsEqual("prompt".utf8) && parts[1].first == UInt8(ascii: "p"):
                return number(UnsafeBufferPointer(rebasing: parts[1].dropFirst())).map { .prompt(Int($0)) } ?? .unknown
            default: return .unknown
            }
        }
    }

    /// A non-negative decimal number of at most 18 digits, or nil.
    private static func number(_ digits: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard !digits.isEmpty, digits.count <= 18 else { return nil }
        var value: Int64 = 0
        for digit in digits {
            guard digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int64(digit - UInt8(ascii: "0"))
        }
        return value
    }

    /// Whether `name` may name a collection (``SecretServiceNames/isCollectionName(_:)``).
    static func isCollectionName(_ name: String) -> Bool { SecretServiceNames.isCollectionName(name) }

    /// A collection name made from a label (``SecretServiceNames/collectionName(fromLabel:)``).
    static func name(fromLabel label: String) -> String { SecretServiceNames.collectionName(fromLabel: label) }
}
