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
        var out = Chunks("[")
        for (index, element) in elements.enumerated() {
            if index > 0 { out.append(",") }
            guard let encoded = JSONText.encode(describe(element)) else {
                throw .failure("cannot encode the output as JSON", status: .failed)
            }
            out.append(encoded)
        }
        out.finish("]\n")
    }

    /// Standard output gathered and written 64 KiB at a time (``jsonArray(_:_:)``,
    /// ``write(_:json:by:)``): never the text of a whole list at once.
    private struct Chunks {
        private var text: String

        /// Output that starts with `start`.
        init(_ start: String = "") { text = start }

        /// Adds `piece`, writing out what was gathered once it passes 64 KiB.
        mutating func append(_ piece: String) {
            text += piece
            if text.utf8.count >= 64 * 1024 {
                Terminal.writeOutput(text)
                text = ""
            }
        }

        /// Adds `end` and writes out the rest.
        mutating func finish(_ end: String = "") {
            text += end
            if !text.isEmpty { Terminal.writeOutput(text) }
            text = ""
        }
    }

    /// One element of a list as it is printed (a JSON object, or a line), with what orders it:
    /// all `list` and `search` hold of each item until they print, rather than the item and its
    /// attributes (100,000 of those took 150 MiB).
    struct Printed<Order> {
        let order: Order
        let text: String
    }

    /// What orders `list`'s items: service (or server), account, label, generic passwords
    /// before internet ones.
    struct ListOrder {
        let service: String
        let account: String
        let label: String
        let kind: KeychainItem.Kind

        /// Whether `lhs` comes before `rhs`.
        static func inOrder(_ lhs: ListOrder, _ rhs: ListOrder) -> Bool {
            (lhs.service, lhs.account, lhs.label, lhs.kind.rawValue) < (rhs.service, rhs.account, rhs.label, rhs.kind.rawValue)
        }
    }

    /// `item` as `list` prints it, JSON or a line; nil when it cannot be encoded as JSON.
    static func printed(_ item: KeychainItem, json: Bool) -> Printed<ListOrder>? {
        let order = ListOrder(service: item.service, account: item.account, label: item.label, kind: item.kind)
        guard json else { return Printed(order: order, text: "\(item.service)\t\(item.account)\t\(item.label)\n") }
        return JSONText.encode(describe(item)).map { Printed(order: order, text: $0) }
    }

    /// `items` as `list` prints them.
    static func printed(_ items: [KeychainItem], json: Bool) throws(CommandLineError) -> [Printed<ListOrder>] {
        var printed: [Printed<ListOrder>] = []
        printed.reserveCapacity(items.count)
        for item in items {
            guard let one = Self.printed(item, json: json) else { throw .failure("cannot encode the output as JSON", status: .failed) }
            printed.append(one)
        }
        return printed
    }

    /// Every generic and internet password of every keyring (no secrets) that `keep` keeps,
    /// as `list` prints them; read a page of items at a time, each let go of once printed.
    static func allPrinted(json: Bool, where keep: (KeychainItem) -> Bool) throws(CommandLineError) -> [Printed<ListOrder>] {
        var printed: [Printed<ListOrder>] = []
        var encodable = true
        try CommandLineError.keychain { () throws(KeychainError) in
            let take = { (page: [KeychainItem]) in
                for item in page where keep(item) {
                    guard let one = Self.printed(item, json: json) else { return encodable = false }
                    printed.append(one)
                }
            }
            try Keychain.allAccounts(pages: take)
            try InternetKeychain.allAccounts(pages: take)
        }
        guard encodable else { throw .failure("cannot encode the output as JSON", status: .failed) }
        return printed
    }

    /// What orders the matches of `search --attr`: when they last changed, then their path.
    typealias MatchOrder = (modified: Date, path: String)

    /// `search --attr`'s order: the most recently changed first.
    static func newestFirst(_ lhs: MatchOrder, _ rhs: MatchOrder) -> Bool { lhs > rhs }

    /// `match` as `search --attr` prints it, JSON (``describe(_:includingSecret:)``) or its path
    /// and label; nil when it cannot be encoded as JSON.
    static func printed(_ match: KeychainAttributes.Match, json: Bool) -> Printed<MatchOrder>? {
        let order = (modified: match.modified, path: match.path)
        guard json else { return Printed(order: order, text: "\(match.path)\t\(match.label)\n") }
        return JSONText.encode(describe(match)).map { Printed(order: order, text: $0) }
    }

    /// Writes `printed` in `list`'s order (``ListOrder``).
    static func write(_ printed: [Printed<ListOrder>], json: Bool) {
        write(printed, json: json, by: ListOrder.inOrder)
    }

    /// Writes `printed` ordered by `inOrder` (equal ones by their text, so that they print
    /// alike every time): a JSON array, or the lines, 64 KiB at a time.
    static func write<Order>(_ printed: [Printed<Order>], json: Bool, by inOrder: (Order, Order) -> Bool) {
        let sorted = printed.sorted { lhs, rhs in
            inOrder(lhs.order, rhs.order) || (!inOrder(rhs.order, lhs.order) && lhs.text < rhs.text)
        }
        var out = Chunks(json ? "[" : "")
        for (index, element) in sorted.enumerated() {
            if json && index > 0 { out.append(",") }
            out.append(element.text)
        }
        out.finish(json ? "]\n" : "")
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
