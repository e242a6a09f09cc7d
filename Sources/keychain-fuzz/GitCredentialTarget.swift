import Foundation
import SecretCtl

/// git's credential helper protocol (`secretctl git-credential`): the request git writes on
/// standard input, the item a `store` writes, the `get` reply, and the stored secret's
/// `password_expiry_utc` / `oauth_refresh_token` lines read back. No keyring is called.
enum GitCredentialTarget {
    /// The target.
    static let target = FuzzTarget(
        name: "git-credential", summary: "git credential requests, stored secrets and replies", maximumLength: 4096,
        run: run)

    private static func run(_ data: Data) {
        let request = GitCredential.parse(String(decoding: data, as: UTF8.self))
        require(request == readAsGit(data), "the request reads differently from git's rules: \(request) != \(readAsGit(data))")
        for (key, value) in request {
            require(!key.unicodeScalars.contains("\n") && !value.unicodeScalars.contains("\n"),
                    "a request field spans lines: \(key.debugDescription)=\(value.debugDescription)")
        }
        _ = GitCredential.isQuit(request)
        if let attributes = GitCredential.attributes(for: request) {
            require(attributes["protocol"] == request["protocol"] && attributes["server"] != nil,
                    "a query lost its protocol or server: \(attributes)")
            if let port = attributes["port"] { require(Int(port) != nil, "a port is not a number: \(port.debugDescription)") }
        }
        if let item = GitCredential.itemToStore(for: request) {
            require(!item.secret.password.isEmpty && item.attributes["xdg:schema"] == GitCredential.schema,
                    "a stored item has no password or schema")
            // What `store` writes, `get` reads back ...
            let readBack = StoredSecret(decoding: item.secret.encoded)
            require(readBack == item.secret,
                    "the stored secret reads back differently: \(item.secret.password.debugDescription) \(item.secret.fields) "
                        + "-> \(readBack.password.debugDescription) \(readBack.fields)")
            // ... and git reads the same password and fields from the reply. (A value that
            // ends in "\r" cannot travel: git drops a "\r" before each "\n" it reads.)
            let reply = GitCredential.parse(GitCredential.reply(to: [:], storedUser: item.attributes["user"], stored: readBack))
            let sent = [("password", item.secret.password), ("username", item.attributes["user"]!)] + item.secret.fields
            for (key, value) in sent where value.unicodeScalars.last != "\r" {
                require(reply[key] == value, "the reply's \(key) differs: \(reply)")
            }
        }
        // The input as a stored secret: any client may have written the item.
        let stored = StoredSecret(decoding: data)
        _ = stored.isExpired(at: Int(Date().timeIntervalSince1970))
        let again = StoredSecret(decoding: stored.encoded)
        require(again == stored, "a stored secret decodes differently after re-encoding: \(stored.password.debugDescription)")
    }

    /// A request read by the rules of git's `credential_read`, on bytes: lines end at `\n`
    /// with one `\r` before it dropped, an empty line ends the request, and each line is
    /// split at its first `=` (lines without one are skipped here; git refuses them).
    private static func readAsGit(_ data: Data) -> [String: String] {
        var result: [String: String] = [:]
        for var line in Array(data).split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            if line.last == UInt8(ascii: "\r") { line.removeLast() }
            if line.isEmpty { break }
            guard let equals = line.firstIndex(of: UInt8(ascii: "=")) else { continue }
            result[String(decoding: line[..<equals], as: UTF8.self)] = String(decoding: line[(equals + 1)...], as: UTF8.self)
        }
        return result
    }
}
