import Foundation
import SecretCtl

/// `secretctl import` of a browser's or password manager's CSV: the parser and the mapping of
/// rows to internet password items.
enum CSVImportTarget {
    /// The target.
    static let target = FuzzTarget(name: "csv-import", summary: "CSV password lists", maximumLength: 8192, run: run)

    private static func run(_ data: Data) {
        // As `secretctl import` reads a file that is not an export: UTF-8 text, or refused.
        guard !ExportFile.isExport(data), let text = String(data: data, encoding: .utf8) else { return }
        let rows = CSVImport.parse(text)
        guard let (items, skipped) = try? CSVImport.items(text) else { return }
        let dataRows = rows.dropFirst().filter { !($0.count == 1 && $0[0].isEmpty) }.count
        require(items.count + skipped == dataRows, "\(items.count) items + \(skipped) skipped from \(dataRows) rows")
        for item in items {
            require(!item.secret.isEmpty, "an item without a password")
            require(item.attributes["server"].map { !$0.isEmpty } ?? false, "an item without a server: \(item.attributes)")
            require(item.attributes["xdg:schema"] == "org.gnome.keyring.NetworkPassword", "an item without the schema")
            require(item.attributes["user"] != nil, "an item without a user")
            if let port = item.attributes["port"] {
                require(Int(port).map { (1...65535).contains($0) } ?? false, "an item with port \(port.debugDescription)")
            }
        }
    }
}
