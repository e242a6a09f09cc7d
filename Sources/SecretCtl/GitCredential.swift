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
            guard let match = found.first(where: { $0.secret != nil }), let secret = match.secret else { return }
            var reply = ""
            if request["username"] == nil, let user = match.attributes["user"] { reply += "username=\(user)\n" }
            reply += "password=\(String(decoding: secret, as: UTF8.self))\n"
            Terminal.writeOutput(reply)
        case "store":
            guard attributes["user"] != nil, let password = request["password"], !password.isEmpty else { return }
            var full = attributes
            full["xdg:schema"] = schema
            let label = "Git: \(request["protocol"]!)://\(request["host"]!)/\(request["path"] ?? "")"
            try CommandLineError.keychain { () throws(KeychainError) in
                try KeychainAttributes.store(full, label: label, secret: Data(password.utf8), collection: nil)
            }
        case "erase":
            // Erase only what git rejected: when it names the password, items holding another
            // secret (stored meanwhile) stay.
            let found = try CommandLineError.keychain { () throws(KeychainError) in
                try KeychainAttributes.search(attributes, unlock: true, loadSecrets: true)
            }
            for match in found where request["password"] == nil || match.secret == Data(request["password"]!.utf8) {
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
