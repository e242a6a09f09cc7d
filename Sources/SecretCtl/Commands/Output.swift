import FoundationEssentials
import Glibc
import Keychain
import KeychainCore

/// How verbs print what they found: a secret, one line of JSON, a list of items, and the JSON
/// fields of an item (keys documented in secretctl(1)).
enum Output {
    /// Writes a secret byte for byte; a newline follows only on a terminal, so
    /// `$(secretctl get S A)` is exact.
    static func secret(_ secret: Data) {
        Terminal.writeOutput(secret)
        if Terminal.isTerminal(STDOUT_FILENO) { Terminal.writeOutput("\n") }
    }

    /// Writes `value` (dictionaries, arrays, strings, numbers, booleans, nil) as one line of JSON.
    static func json(_ value: Any) throws(CommandLineError) {
        guard let text = JSONText.encode(value) else {
            throw .failure("cannot encode the output as JSON", status: .failed)
        }
        Terminal.writeOutput(text + "\n")
    }

    /// `elements` as a JSON array, byte for byte what ``json(_:)`` writes for
    /// `elements.map(describe)`, but written out a chunk at a time: neither the described
    /// elements nor the text of the whole list are ever held at once (100,000 items of `list`
    /// made both).
    static func jsonArray<Element>(_ elements: [Element], _ describe: (Element) -> Any) throws(CommandLineError) {
        var text = "["
        for (index, element) in elements.enumerated() {
            if index > 0 { text += "," }
            guard let encoded = JSONText.encode(describe(element)) else {
                throw .failure("cannot encode the output as JSON", status: .failed)
            }
            text += encoded
            if text.utf8.count >= chunkBytes {
                Terminal.writeOutput(text)
                text = ""
            }
        }
        Terminal.writeOutput(text + "]\n")
    }

    /// `elements` a line each, written out a chunk at a time.
    static func lines<Element>(_ elements: [Element], _ line: (Element) -> String) {
        var text = ""
        for element in elements {
            text += line(element)
            if text.utf8.count >= chunkBytes {
                Terminal.writeOutput(text)
                text = ""
            }
        }
        if !text.isEmpty { Terminal.writeOutput(text) }
    }

    /// How much output ``jsonArray(_:_:)`` and ``lines(_:_:)`` gather before they write it.
    private static let chunkBytes = 64 * 1024

    /// Every generic and internet password of every keyring (no secrets), sorted.
    static func allItems() throws(CommandLineError) -> [KeychainItem] {
        try sorted(CommandLineError.keychain { () throws(KeychainError) in
            try Keychain.allAccounts() + InternetKeychain.allAccounts()
        })
    }

    /// `items` in the order `list` and `search` print them: by service (or server), account,
    /// label, generic passwords before internet ones.
    static func sorted(_ items: [KeychainItem]) -> [KeychainItem] {
        items.sorted { ($0.service, $0.account, $0.label, $0.kind.rawValue) < ($1.service, $1.account, $1.label, $1.kind.rawValue) }
    }

    /// Items as `list` and `search` print them: JSON, or service, account and label per line.
    static func items(_ items: [KeychainItem], json: Bool) throws(CommandLineError) {
        if json {
            try jsonArray(items, describe)
        } else {
            lines(items) { "\($0.service)\t\($0.account)\t\($0.label)\n" }
        }
    }

    /// The JSON fields of an item; dates in ISO 8601, absent values null. `kind` is `generic` or
    /// `internet`; an internet password's `service` is its server, and `url` its address.
    static func describe(_ item: KeychainItem) -> [String: Any?] {
        var fields: [String: Any?] = [
            "service": item.service, "account": item.account, "label": item.label, "comment": item.comment,
            "group": item.accessGroup, "accessible": item.accessibility.name, "created": item.created.formatted(.iso8601),
            "modified": item.modified.formatted(.iso8601), "kind": kindName(item.kind),
        ]
        if item.kind == .internetPassword { fields["url"] = LoginAttributes.url(of: item.attributes) }
        return fields
    }

    /// How `list`, `search` and `show` name an item's kind.
    static func kindName(_ kind: KeychainItem.Kind) -> String {
        switch kind {
        case .genericPassword: "generic"
        case .internetPassword: "internet"
        }
    }

    /// The JSON fields of an item found by attributes: path, label, attributes, dates and, when
    /// asked and readable, the secret.
    static func describe(_ match: KeychainAttributes.Match, includingSecret: Bool = false) -> [String: Any?] {
        var fields: [String: Any?] = [
            "path": match.path, "label": match.label, "attributes": match.attributes,
            "created": match.created.formatted(.iso8601), "modified": match.modified.formatted(.iso8601),
        ]
        if includingSecret { fields["secret"] = match.secret.map(jsonSecret) }
        return fields
    }

    /// A secret for JSON: the text when it is UTF-8, otherwise `{"base64": …}`.
    static func jsonSecret(_ secret: Data) -> Any {
        if let text = String(data: secret, encoding: .utf8) { return text }
        return ["base64": secret.base64EncodedString()]
    }
}
