import FoundationEssentials
import KeychainCore
import Keychain

/// Password lists exported by browsers and password managers as CSV with (at least) the
/// columns `url`, `username` and `password`, and optionally `name`. Each row becomes an internet
/// password in GNOME's network-password attributes.
package enum CSVImport {
    /// Parses `text`; rows missing a URL host or password, or with a port outside 1-65535,
    /// are counted as skipped.
    package static func items(_ text: String) throws(CommandLineError) -> (items: [ExportFile.Item], skipped: Int) {
        var rows = parse(text)
        guard let header = rows.first?.map({ $0.lowercased().trimmingWhitespace }) else {
            throw .failure("the CSV file is empty", status: .usage)
        }
        rows.removeFirst()
        guard let url = header.firstIndex(of: "url"), let username = header.firstIndex(of: "username"),
            let password = header.firstIndex(of: "password")
        else { throw .failure("the CSV file needs url, username and password columns", status: .usage) }
        let name = header.firstIndex(of: "name")
        var items: [ExportFile.Item] = []
        var skipped = 0
        for row in rows where !(row.count == 1 && row[0].isEmpty) {
            guard row.count > max(url, username, password), !row[password].isEmpty,
                let attributes = LoginAttributes.attributes(url: row[url], user: row[username]),
                let host = attributes[KeychainAttributeName.server]
            else {
                skipped += 1
                continue
            }
            let label = name.flatMap { $0 < row.count && !row[$0].isEmpty ? row[$0] : nil } ?? "\(row[username])@\(host)"
            items.append(ExportFile.Item(label: label, attributes: attributes, secret: Data(row[password].utf8)))
        }
        return (items, skipped)
    }

    /// RFC 4180 fields: commas, quoted fields with doubled quotes, CRLF or LF line ends.
    package static func parse(_ text: String) -> [[String]] {
        var rows: [[String]] = []
        var row: [String] = []
        var field = ""
        var quoted = false
        var iterator = Array(text.unicodeScalars).makeIterator()
        var pending: Unicode.Scalar? = nil
        while let scalar = pending ?? iterator.next() {
            pending = nil
            if quoted {
                if scalar == "\"" {
                    if let next = iterator.next() {
                        if next == "\"" { field.unicodeScalars.append("\"") } else { quoted = false; pending = next }
                    } else {
                        quoted = false
                    }
                } else {
                    field.unicodeScalars.append(scalar)
                }
                continue
            }
            switch scalar {
            case "\"": quoted = true
            case ",": row.append(field); field = ""
            case "\r": continue
            case "\n": row.append(field); rows.append(row); row = []; field = ""
            default: field.unicodeScalars.append(scalar)
            }
        }
        if !field.isEmpty || !row.isEmpty { row.append(field); rows.append(row) }
        return rows
    }
}
