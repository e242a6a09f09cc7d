package import FoundationEssentials
import Keychain

/// git's credential helper protocol, for `secretctl git-credential` (``GitCredentialCommand``):
/// requests, and items in the attributes git's own libsecret helper uses (user, server, port,
/// protocol, object), so either helper reads what the other stored.
package enum GitCredential {
    /// The schema name written with new items. git's libsecret helper up to 2.40 (Debian 12)
    /// looks up `org.gnome.keyring.NetworkPassword` items only; later ones (`org.git.Password`)
    /// do not match the schema name, so this one serves both.
    package static let schema = KeychainAttributeName.networkSchema

    /// Whether git asked the helper to stop (`quit=1` or `quit=true`).
    package static func isQuit(_ request: [String: String]) -> Bool {
        request["quit"] == "1" || request["quit"] == "true"
    }

    /// The item attributes a request names (protocol, server, port, object, user); nil when it
    /// names no protocol or host, which leaves nothing to go on.
    package static func attributes(for request: [String: String]) -> [String: String]? {
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
        guard attributes["protocol"] != nil, attributes["server"] != nil else { return nil }
        return attributes
    }

    /// What a `store` request stores: the attributes (with the schema), the label and the
    /// secret; nil when the request names no user or no password, or nothing to go on.
    package static func itemToStore(
        for request: [String: String]
    ) -> (attributes: [String: String], label: String, secret: StoredSecret)? {
        guard var attributes = attributes(for: request), attributes["user"] != nil,
            let password = request["password"], !password.isEmpty,
            let scheme = request["protocol"], let host = request["host"]
        else { return nil }
        attributes[KeychainAttributeName.schema] = schema
        let label = "Git: \(scheme)://\(host)/\(request["path"] ?? "")"
        let secret = StoredSecret(
            password: password, fields: StoredSecret.extraKeys.compactMap { key in request[key].map { (key, $0) } })
        return (attributes, label, secret)
    }

    /// The reply to a `get` request that found `stored`: the user when git did not name one
    /// (`storedUser`, from the item), the password, then the stored extra fields.
    package static func reply(to request: [String: String], storedUser: String?, stored: StoredSecret) -> String {
        var reply = ""
        if request["username"] == nil, let user = storedUser { reply += "username=\(user)\n" }
        reply += "password=\(stored.password)\n"
        for (key, value) in stored.fields { reply += "\(key)=\(value)\n" }
        return reply
    }

    /// git's request: `key=value` lines up to a blank line; unknown keys are kept and ignored.
    /// Lines end at each `\n` byte, and a `\r` before it is dropped, as git reads them
    /// (`strbuf_getline`); a `\r\n` is never one character here, unlike in Swift's `String`.
    package static func parse(_ text: String) -> [String: String] {
        var result: [String: String] = [:]
        for var line in lines(of: text) {
            if line.last == "\r" { line.removeLast() }
            if line.isEmpty { break }
            guard let (key, value) = keyAndValue(line) else { continue }
            result[key] = value
        }
        return result
    }

    /// `text` split at each `\n` (a Unicode scalar, so `\r\n` splits too).
    static func lines(of text: String) -> [String.UnicodeScalarView] {
        text.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false).map(String.UnicodeScalarView.init)
    }

    /// The parts of `key=value` around its first `=` (a Unicode scalar, so a combining mark
    /// after it does not hide it); nil without one.
    static func keyAndValue(_ line: String.UnicodeScalarView) -> (String, String)? {
        guard let equals = line.firstIndex(of: "=") else { return nil }
        return (String(line[..<equals]), String(line[line.index(after: equals)...]))
    }
}

/// What a git credential item holds, as git's own libsecret helper (2.41 and later) writes it:
/// the password, then `password_expiry_utc=…` and `oauth_refresh_token=…` lines when git
/// gave them. The refresh token is a secret too, so it lives in the secret, not an attribute.
package struct StoredSecret: Equatable {
    /// The keys stored after the password, in git's order.
    package static let extraKeys = ["password_expiry_utc", "oauth_refresh_token"]

    /// The password (or token) itself.
    package var password: String
    /// The extra `key=value` fields, in order.
    package var fields: [(String, String)]

    /// A secret with these parts.
    package init(password: String, fields: [(String, String)]) {
        self.password = password
        self.fields = fields
    }

    /// Splits a stored secret; lines that are not `key=value` of a known key are ignored.
    package init(decoding data: Data) {
        let lines = GitCredential.lines(of: String(decoding: data, as: UTF8.self))
        password = lines.first.map(String.init) ?? ""
        fields = lines.dropFirst().compactMap { line in
            guard let (key, value) = GitCredential.keyAndValue(line), Self.extraKeys.contains(key) else { return nil }
            return (key, value)
        }
    }

    /// The bytes to store.
    package var encoded: Data {
        Data(([password] + fields.map { "\($0.0)=\($0.1)" }).joined(separator: "\n").utf8)
    }

    /// Whether git's expiry time (seconds since 1970) has passed at `now`.
    package func isExpired(at now: Int) -> Bool {
        guard let expiry = fields.first(where: { $0.0 == "password_expiry_utc" }).flatMap({ Int($0.1) }) else { return false }
        return expiry <= now
    }

    /// Same password and same fields in the same order.
    package static func == (lhs: StoredSecret, rhs: StoredSecret) -> Bool {
        lhs.password == rhs.password && lhs.fields.map { "\($0.0)=\($0.1)" } == rhs.fields.map { "\($0.0)=\($0.1)" }
    }
}
