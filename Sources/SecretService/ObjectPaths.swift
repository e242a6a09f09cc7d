/// The object paths secretd serves; item and collection paths come from database ids and
/// names, so they stay the same across restarts.
enum ObjectPaths {
    static let service = "/org/freedesktop/secrets"
    static let collectionPrefix = "/org/freedesktop/secrets/collection"
    static let aliasPrefix = "/org/freedesktop/secrets/aliases"
    static let sessionPrefix = "/org/freedesktop/secrets/session"
    static let promptPrefix = "/org/freedesktop/secrets/prompt"
    /// The "no prompt needed" and "no collection" path.
    static let none = "/"

    static func collection(_ name: String) -> String { "\(collectionPrefix)/\(name)" }
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
        case unknown
    }

    /// Parses a path this daemon serves.
    static func parse(_ path: String) -> Target {
        if path == service { return .service }
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        // "", "org", "freedesktop", "secrets", kind, ...
        guard parts.count >= 6, parts[0].isEmpty, parts[1] == "org", parts[2] == "freedesktop", parts[3] == "secrets"
        else { return .unknown }
        switch (parts[4], parts.count) {
        case ("collection", 6): return .collection(name: parts[5])
        case ("collection", 7): return Int64(parts[6]).map { .item(collection: parts[5], id: $0) } ?? .unknown
        case ("aliases", 6): return .alias(parts[5])
        case ("session", 6) where parts[5].hasPrefix("s"): return Int(parts[5].dropFirst()).map { .session($0) } ?? .unknown
        case ("prompt", 6) where parts[5].hasPrefix("p"): return Int(parts[5].dropFirst()).map { .prompt($0) } ?? .unknown
        default: return .unknown
        }
    }

    /// A collection name made from a label: letters, digits and `_`, never empty.
    static func name(fromLabel label: String) -> String {
        let cleaned = String(label.lowercased().unicodeScalars.map {
            ($0.properties.isAlphabetic && $0.isASCII) || ("0"..."9").contains(Character($0)) ? Character($0) : "_"
        })
        return cleaned.isEmpty ? "collection" : String(cleaned.prefix(64))
    }
}
