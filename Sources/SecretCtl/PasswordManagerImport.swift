package import FoundationEssentials
import KeychainCore

/// Exports of password managers that `secretctl import FILE` recognises by their content:
/// Bitwarden's unencrypted JSON and its CSV, Apple Passwords' CSV
/// (`Title,URL,Username,Password,Notes,OTPAuth`) and 1Password 8's CSV
/// (`Title,Url,Username,Password,OTPAuth,Favorite,Archived,Tags,Notes`). Each entry becomes an
/// item by ``ImportedLogin``'s rule. The whole file is read before anything is stored: a file
/// that is not what it claims to be imports nothing.
package enum PasswordManagerImport {
    /// A recognised export.
    package enum Source: String, Sendable {
        /// Bitwarden's "JSON" export (unencrypted).
        case bitwardenJSON = "a Bitwarden export (JSON)"
        /// Bitwarden's "CSV" export.
        case bitwardenCSV = "a Bitwarden export (CSV)"
        /// Apple Passwords' (and Safari's) export.
        case apple = "an Apple Passwords export (CSV)"
        /// 1Password 8's CSV export.
        case onePassword = "a 1Password export (CSV)"
    }

    /// What a file held.
    package struct Contents {
        /// The items to store.
        package var items: [ExportFile.Item] = []
        /// Entries with nothing to keep (no password and no notes).
        package var empty = 0
        /// Entries of kinds that are not passwords (Bitwarden's cards, identities and SSH keys).
        package var otherKinds = 0
    }

    /// The CSV headers, lower-cased, that name a manager.
    private static let csvHeaders: [[String]: Source] = [
        ["title", "url", "username", "password", "notes", "otpauth"]: .apple,
        ["title", "url", "username", "password", "otpauth", "favorite", "archived", "tags", "notes"]: .onePassword,
        ["folder", "favorite", "type", "name", "notes", "fields", "reprompt", "login_uri", "login_username", "login_password", "login_totp"]:
            .bitwardenCSV,
        ["folder", "favorite", "type", "name", "notes", "fields", "login_uri", "login_username", "login_password", "login_totp"]:
            .bitwardenCSV,
    ]

    /// The manager `data` is an export of, or nil (then it may be a browser's CSV).
    package static func source(of data: Data) -> Source? {
        if data.first(where: { ![0x20, 0x09, 0x0A, 0x0D, 0xEF, 0xBB, 0xBF].contains($0) }) == UInt8(ascii: "{") {
            return .bitwardenJSON
        }
        guard let text = String(data: data.prefix(4096), encoding: .utf8) ?? String(data: data, encoding: .utf8),
            let header = CSVImport.parse(String(withoutByteOrderMark(text).prefix { $0 != "\n" && $0 != "\r\n" })).first
        else { return nil }
        return csvHeaders[header.map { $0.lowercased().trimmingWhitespace }]
    }

    /// The entries of `data`, an export of `source`; a clear error when it cannot be read.
    package static func contents(_ data: Data, source: Source) throws(CommandLineError) -> Contents {
        switch source {
        case .bitwardenJSON: return try bitwardenJSON(data)
        case .bitwardenCSV, .apple, .onePassword:
            guard let text = String(data: data, encoding: .utf8) else { throw .failure("\(source.rawValue) that is not UTF-8 text", status: .usage) }
            return csv(CSVImport.parse(String(withoutByteOrderMark(text))), source: source)
        }
    }

    // MARK: - CSV

    /// `text` without the byte order mark some exports begin with.
    private static func withoutByteOrderMark(_ text: String) -> Substring {
        text.hasPrefix("\u{FEFF}") ? text.dropFirst() : Substring(text)
    }

    private static func csv(_ rows: [[String]], source: Source) -> Contents {
        guard let header = rows.first?.map({ $0.lowercased().trimmingWhitespace }) else { return Contents() }
        var contents = Contents()
        for row in rows.dropFirst() where !(row.count == 1 && row[0].isEmpty) {
            func field(_ name: String) -> String {
                guard let index = header.firstIndex(of: name), index < row.count else { return "" }
                return row[index]
            }
            var login = ImportedLogin()
            switch source {
            case .apple, .onePassword:
                login.title = field("title")
                login.url = field("url")
                login.username = field("username")
                login.password = field("password")
                login.notes = field("notes")
                login.otp = field("otpauth")
                login.extra[LoginAttributes.tags] = field("tags")
            case .bitwardenCSV:
                guard ["login", "note"].contains(field("type")) else {
                    contents.otherKinds += 1
                    continue
                }
                login.title = field("name")
                login.url = field("login_uri").split(separator: ",").first.map(String.init) ?? ""
                login.username = field("login_username")
                login.password = field("login_password")
                login.notes = field("notes")
                login.otp = field("login_totp")
                login.extra[LoginAttributes.folder] = field("folder")
                for line in field("fields").split(separator: "\n") {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    let name = line[..<colon].trimmingWhitespace
                    login.extra[LoginAttributes.fieldPrefix + name] = line[line.index(after: colon)...].trimmingWhitespace
                }
            case .bitwardenJSON:
                continue
            }
            if let item = login.item { contents.items.append(item) } else { contents.empty += 1 }
        }
        return contents
    }

    // MARK: - Bitwarden JSON

    /// The parts of Bitwarden's export that are read; everything else is ignored.
    private struct BitwardenExport: Decodable {
        var encrypted: Bool?
        var passwordProtected: Bool?
        var folders: [Folder]?
        var items: [Entry]?

        struct Folder: Decodable {
            var id: String
            var name: String
        }

        struct Entry: Decodable {
            var type: Int
            var name: String?
            var notes: String?
            var folderId: String?
            var deletedDate: String?
            var login: Login?
            var fields: [Field]?
        }

        struct Login: Decodable {
            var uris: [URI]?
            var username: String?
            var password: String?
            var totp: String?
        }

        struct URI: Decodable {
            var uri: String?
        }

        struct Field: Decodable {
            var name: String?
            var value: String?
        }
    }

    /// Bitwarden's item types that hold passwords or notes: 1 a login, 2 a secure note (3 is a
    /// card, 4 an identity, 5 an SSH key).
    private static let bitwardenLogin = 1
    private static let bitwardenNote = 2

    private static func bitwardenJSON(_ data: Data) throws(CommandLineError) -> Contents {
        let export: BitwardenExport
        do {
            export = try JSONDecoder().decode(BitwardenExport.self, from: data)
        } catch {
            throw .failure("this JSON file is not a Bitwarden export that can be read (\(Self.describe(error)))", status: .usage)
        }
        if export.encrypted == true || export.passwordProtected == true {
            throw .failure("this Bitwarden export is encrypted; export the vault again as \"JSON\" (not \"JSON (Encrypted)\")", status: .usage)
        }
        guard let entries = export.items else { throw .failure("this JSON file has no \"items\": not a Bitwarden export", status: .usage) }
        let folders = Dictionary((export.folders ?? []).map { ($0.id, $0.name) }, uniquingKeysWith: { first, _ in first })
        var contents = Contents()
        for entry in entries where entry.deletedDate == nil {
            guard entry.type == bitwardenLogin || entry.type == bitwardenNote else {
                contents.otherKinds += 1
                continue
            }
            var login = ImportedLogin()
            login.title = entry.name ?? ""
            login.notes = entry.notes ?? ""
            login.url = entry.login?.uris?.lazy.compactMap(\.uri).first ?? ""
            login.username = entry.login?.username ?? ""
            login.password = entry.login?.password ?? ""
            login.otp = entry.login?.totp ?? ""
            login.extra[LoginAttributes.folder] = entry.folderId.flatMap { folders[$0] } ?? ""
            for field in entry.fields ?? [] {
                guard let name = field.name, !name.isEmpty else { continue }
                login.extra[LoginAttributes.fieldPrefix + name] = field.value ?? ""
            }
            if let item = login.item { contents.items.append(item) } else { contents.empty += 1 }
        }
        return contents
    }

    /// What was wrong with the JSON, without quoting its values (they may be secrets).
    private static func describe(_ error: any Error) -> String {
        switch error as? DecodingError {
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .keyNotFound(_, let context), .dataCorrupted(let context):
            let path = context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
            return path.isEmpty ? "not valid JSON" : "unexpected value at \(path)"
        default:
            return "not valid JSON"
        }
    }
}
