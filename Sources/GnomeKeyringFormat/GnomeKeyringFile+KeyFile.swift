import SecretCrypto

// The plain format of a keyring without a password (gnome-keyring's pkcs11/secret-store/
// gkm-secret-textual.c), a GLib key file:
//
//   [keyring]           display-name, ctime, mtime, lock-on-idle, lock-after, lock-timeout
//   [ID]                per item: item-type, display-name, secret (text) or binary-secret
//                       (hex), mtime, ctime
//   [ID:attributeN]     per attribute: name, type (string or uint32), value
//   [ID:acl*]           the old API's access lists (not needed)

extension GnomeKeyringFile {
    static func readKeyFile(_ data: [UInt8], name: String) throws(GnomeKeyringError) -> GnomeKeyring {
        guard let text = String(validating: data, as: UTF8.self) else { throw .notAKeyring }
        let file: KeyFile
        do { file = try KeyFile(text) } catch { throw .notAKeyring }
        guard file.groups.first?.name == "keyring", let keyring = file.group("keyring") else { throw .notAKeyring }
        var items: [GnomeKeyring.Item] = []
        for group in file.groups where group.name != "keyring" && !group.name.contains(":") {
            items.append(try item(group.name, group.entries, in: file))
        }
        return GnomeKeyring(
            name: name, label: try keyring["display-name"].map(KeyFile.unescape) ?? "",
            created: try number(keyring["ctime"]) ?? 0, modified: try number(keyring["mtime"]) ?? 0, items: items)
    }

    private static func item(_ id: String, _ entries: [String: String], in file: KeyFile) throws(GnomeKeyringError) -> GnomeKeyring.Item {
        var attributes: [String: String] = [:]
        for group in file.groups where group.name.hasPrefix("\(id):attribute") {
            guard let attribute = try group.entries["name"].map(KeyFile.unescape) else { continue }
            let value = try group.entries["value"].map(KeyFile.unescape) ?? ""
            if try group.entries["type"].map(KeyFile.unescape) == "uint32" {
                guard let number = UInt32(value) else { throw .damaged("the integer attribute \(attribute) is \(value.count) characters of no number") }
                attributes[attribute] = String(number)
            } else {
                attributes[attribute] = value
            }
        }
        if attributes[schemaAttribute] == nil {
            let type = try entries["item-type"].map(KeyFile.unescape).flatMap { UInt32($0) } ?? 0
            attributes[schemaAttribute] = schema(ofItemType: type)
        }
        let secret: SecureBytes
        if let text = entries["secret"] {
            secret = SecureBytes(Array(try KeyFile.unescape(text).utf8))
        } else if let hex = entries["binary-secret"] {
            secret = try decodeHex(hex)
        } else {
            secret = SecureBytes(count: 0)
        }
        return GnomeKeyring.Item(
            label: try entries["display-name"].map(KeyFile.unescape) ?? "", attributes: attributes, secret: secret,
            created: try number(entries["ctime"]) ?? 0, modified: try number(entries["mtime"]) ?? 0)
    }

    /// A time field: a decimal number, or nothing.
    private static func number(_ value: String?) throws(GnomeKeyringError) -> UInt64? {
        guard let value else { return nil }
        guard let number = UInt64(value) else { throw .damaged("a time that is not a number") }
        return number
    }

    /// A binary secret written as hexadecimal digits.
    private static func decodeHex(_ hex: String) throws(GnomeKeyringError) -> SecureBytes {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { throw .damaged("a binary secret of an odd number of digits") }
        let secret = SecureBytes(count: digits.count / 2)
        func value(_ digit: UInt8) -> UInt8? {
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        let valid = secret.withMutableBytes { out in
            for index in 0..<out.count {
                guard let high = value(digits[2 * index]), let low = value(digits[2 * index + 1]) else { return false }
                out[index] = high << 4 | low
            }
            return true
        }
        guard valid else { throw .damaged("a binary secret that is not hexadecimal") }
        return secret
    }
}
