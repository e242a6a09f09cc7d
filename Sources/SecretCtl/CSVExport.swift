import FoundationEssentials
import Keychain

/// `secretctl export --format csv`: items as the browsers' password CSV
/// (`name,url,username,password,note`, as Chrome writes it and Firefox, Bitwarden, KeePassXC
/// and ``CSVImport`` read it), in the clear.
///
/// - An internet password's URL is rebuilt from its `protocol`, `server` and `port`; other
///   items have none (browsers skip such rows; password managers keep them).
/// - The user name is the item's `user`, else `account`, else `username`; the note its `notes`.
/// - A secret that is not UTF-8 text cannot be a CSV field: such items are left out and counted.
enum CSVExport {
    /// The first line.
    static let header = "name,url,username,password,note"

    /// The file's bytes (the caller wipes them) and how many items were left out.
    static func bytes(of items: [ExportFile.Item]) -> (bytes: [UInt8], leftOut: Int) {
        var bytes = Array((header + "\r\n").utf8)
        var leftOut = 0
        for item in items {
            guard let password = String(validating: item.secret, as: UTF8.self) else {
                leftOut += 1
                continue
            }
            let attributes = item.attributes
            let fields = [
                item.label, LoginAttributes.url(of: attributes), LoginAttributes.userName(of: attributes), password,
                attributes[LoginAttributes.notes] ?? "",
            ]
            bytes += Array((fields.map(quoted).joined(separator: ",") + "\r\n").utf8)
        }
        return (bytes, leftOut)
    }

    /// A field quoted as RFC 4180 asks when it holds a comma, a quote, a line end or edge spaces.
    static func quoted(_ field: String) -> String {
        let needsQuotes = field.contains { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" || $0 == "\r\n" }
            || field.first == " " || field.last == " "
        return needsQuotes ? "\"" + field.split(separator: "\"", omittingEmptySubsequences: false).joined(separator: "\"\"") + "\"" : field
    }
}
