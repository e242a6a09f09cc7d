import Foundation
import Keychain

/// `secretctl git-credential get|store|erase`: git's credential helper protocol over items in
/// the attributes git's own libsecret helper uses (user, server, port, protocol, object), so
/// either helper reads what the other stored.
enum GitCredential {
    /// The schema name written with new items. git's libsecret helper up to 2.40 (Debian 12)
    /// looks up `org.gnome.keyring.NetworkPassword` items only; later ones (`org.git.Password`)
    /// do not match the schema name, so this one serves both.
    static let schema = "org.gnome.keyring.NetworkPassword"

    /// Runs one helper action with git's `key=value` request on standard input.
    static func run(_ action: String) throws(CommandLineError) {
        let request = parse(String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self))
        guard request["quit"] != "1" && request["quit"] != "true" else { return }
        var attributes: [String: String] = [:]
        attributes["protocol"] = request["protocol"]
        if let host = request["host"] {
            // git sends host:port in one field.
            if let colon = host.lastIndex(of: ":"), let port = Int(host[host.index(after: colon)...]) {
                attributes["server"] = String(host[..<colon])
                attributes["port"] = String(port)
            } else {
                attributes["server"] = host
            }
        }
        attributes["object"] = request["path"]
        attributes["user"] = request["username"]
        guard attributes["protocol"] != nil, attributes["server"] != nil else { return }  // nothing to go on

        switch action {
        case "get":
            let found = try CommandLineError.keychain { () throws(KeychainError) in
                try KeychainAttributes.search(attributes, unlock: true, loadSecrets: true)
            }
            // The newest credential that has not expired (git drops expired ones; git 2.39 would not).
            let now = Int(Date().timeIntervalSince1970)
            let credentials = found.compactMap { match in match.secret.map { (match, StoredSecret(decoding: $0)) } }
            guard let (match, stored) = credentials.first(where: { !$0.1.isExpired(at: now) }) else { return }
            var reply = ""
            if request["username"] == nil, let user = match.attributes["user"] { reply += "username=\(user)\n" }
            reply += "password=\(stored.password)\n"
            for (key, value) in stored.fields { reply += "\(key)=\(value)\n" }
            Terminal.writeOutput(reply)
        case "store":
            guard attributes["user"] != nil, let password = request["password"], !password.isEmpty else { return }
            var full = attributes
            full["xdg:schema"] = schema
            let label = "Git: \(request["protocol"]!)://\(request["host"]!)/\(request["path"] ?? "")"
            let stored = StoredSecret(
                password: password,
                fields: StoredSecret.extraKeys.compactMap { key in request[key].map { (key, $0) } })
            try CommandLineError.keychain { () throws(KeychainError) in
                try KeychainAttributes.store(full, label: label, secret: stored.encoded, collection: nil)
            }
        case "erase":
            // Erase only what git rejected: when it names the password, items holding another
            // secret (stored meanwhile) stay.
            let found = try CommandLineError.keychain { () throws(KeychainError) in
                try KeychainAttributes.search(attributes, unlock: true, loadSecrets: true)
            }
            for match in found
            where request["password"] == nil || match.secret.map({ StoredSecret(decoding: $0).password }) == request["password"] {
                _ = try CommandLineError.keychain { () throws(KeychainError) in try KeychainAttributes.clear(match.attributes) }
            }
        default:
            throw .usage("git-credential takes get, store or erase", command: "git-credential")
        }
    }

    /// git's request: `key=value` lines up to a blank line; unknown keys are kept and ignored.
    static func parse(_ text: String) -> [String: String] {
        var result: [String: String] = [:]
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.isEmpty { break }
            guard let equals = line.firstIndex(of: "=") else { continue }
            result[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return result
    }
}

/// What a git credential item holds, as git's own libsecret helper (2.41 and later) writes it:
/// the password, then `password_expiry_utc=…` and `oauth_refresh_token=…` lines when git
/// gave them. The refresh token is a secret too, so it lives in the secret, not an attribute.
struct StoredSecret: Equatable {
    /// The keys stored after the password, in git's order.
    static let extraKeys = ["password_expiry_utc", "oauth_refresh_token"]

    /// The password (or token) itself.
    var password: String
    /// The extra `key=value` fields, in order.
    var fields: [(String, String)]

    init(password: String, fields: [(String, String)]) {
        self.password = password
        self.fields = fields
    }

    /// Splits a stored secret; lines that are not `key=value` of a known key are ignored.
    init(decoding data: Data) {
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        password = lines.first.map(String.init) ?? ""
        fields = lines.dropFirst().compactMap { line in
            guard let equals = line.firstIndex(of: "=") else { return nil }
            let key = String(line[..<equals])
            return Self.extraKeys.contains(key) ? (key, String(line[line.index(after: equals)...])) : nil
        }
    }

    /// The bytes to store.
    var encoded: Data {
        Data(([password] + fields.map { "\($0.0)=\($0.1)" }).joined(separator: "\n").utf8)
    }

    /// Whether git's expiry time (seconds since 1970) has passed at `now`.
    func isExpired(at now: Int) -> Bool {
        guard let expiry = fields.first(where: { $0.0 == "password_expiry_utc" }).flatMap({ Int($0.1) }) else { return false }
        return expiry <= now
    }

    static func == (lhs: StoredSecret, rhs: StoredSecret) -> Bool {
        lhs.password == rhs.password && lhs.fields.map { "\($0.0)=\($0.1)" } == rhs.fields.map { "\($0.0)=\($0.1)" }
    }
}
