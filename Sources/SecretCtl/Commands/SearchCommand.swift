import Keychain
import KeychainCore

/// `secretctl search`: three ways to look. One word is text to find in service, account or
/// label (any case); `--attr NAME=VALUE` matches attributes exactly and lists the matches;
/// `ATTRIBUTE VALUE` pairs show the newest match as `secret-tool search` does.
enum SearchCommand: Verb {
    /// One word of text, or attribute pairs.
    static let terms = Positional<[String]>(
        "TEXT | ATTRIBUTE VALUE", help: "One word: text to look for. Pairs: attributes to match.", optional: true)
    /// `--attr NAME=VALUE`, repeatable.
    static let attribute = LongOption<[String]>(
        "attr", value: "NAME=VALUE", help: "Match this attribute (repeatable); lists matches as `list` does.")
    /// `--all`: every secret-tool match, not only the newest.
    static let all = LongOption<Bool>("all", help: "With attributes: show every match, not only the newest.")
    /// `--unlock`: let the provider prompt to unlock locked matches.
    static let unlock = LongOption<Bool>("unlock", help: "With attributes: unlock locked matches to show their secrets.")

    static let spec = CommandSpec(
        name: "search",
        abstract: "Find items whose service, account or label contains TEXT (any case); or, as secret-tool, by attributes.",
        arguments: [terms], options: [Common.json, attribute, all, unlock],
        examples: [
            "secretctl search github", "secretctl search --attr service=com.example.mail --json",
            "secretctl search --all service com.example.mail",
        ])

    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        let words = parsed[Self.terms]
        let json = parsed[Common.json]
        if !parsed[Self.attribute].isEmpty {
            let attributes = try attributes(fromAssignments: parsed[Self.attribute])
            guard words.isEmpty else { throw .usage("give either --attr or words, not both", command: spec.name) }
            try listMatches(of: attributes, json: json)
        } else if words.count == 1, let text = words.first {
            try findText(text, json: json)
        } else {
            let attributes = try Common.attributes(fromPairs: words, verb: spec.name)
            try showMatches(of: attributes, all: parsed[Self.all], unlock: parsed[Self.unlock], json: json)
        }
    }

    /// `--attr`'s `NAME=VALUE` values as a dictionary.
    private static func attributes(fromAssignments assignments: [String]) throws(CommandLineError) -> [String: String] {
        var attributes: [String: String] = [:]
        for assignment in assignments {
            guard let equals = assignment.firstIndex(of: "="), equals != assignment.startIndex else {
                throw .usage("--attr takes NAME=VALUE", command: spec.name)
            }
            attributes[String(assignment[..<equals])] = String(assignment[assignment.index(after: equals)...])
        }
        return attributes
    }

    /// `--attr`: every item with all these attributes, by path and label; never a secret or a
    /// prompt. With `--json` an empty list is an answer, not a failure.
    private static func listMatches(of attributes: [String: String], json: Bool) throws(CommandLineError) {
        // From secretd a page of items a call (Import1.ReadItems), each match kept only as it is
        // printed, so that neither holds every match at once; from another provider through
        // libsecret's search.
        var printed: [Output.Printed<Output.MatchOrder>] = []
        var encodable = true
        func take(_ matches: [KeychainAttributes.Match]) {
            for match in matches {
                guard let one = Output.printed(match, json: json) else { return encodable = false }
                printed.append(one)
            }
        }
        let paged = try CommandLineError.keychain { () throws(KeychainError) in
            try KeychainAttributes.forEachPage(attributes, loadSecrets: false) { page, _ in take(page) }
        }
        if !paged {
            take(try CommandLineError.keychain { () throws(KeychainError) in
                try KeychainAttributes.search(attributes, unlock: false, loadSecrets: false)
            })
        }
        guard encodable else { throw .failure("cannot encode the output as JSON", status: .failed) }
        if printed.isEmpty && !json { throw .failure("nothing matches", status: .notFound) }
        Output.write(printed, json: json, by: Output.newestFirst)
    }

    /// `ATTRIBUTE VALUE ...`, as secret-tool: the newest match (or all) as `name = value` blocks.
    private static func showMatches(of attributes: [String: String], all: Bool, unlock: Bool, json: Bool)
        throws(CommandLineError)
    {
        var found = try CommandLineError.keychain { () throws(KeychainError) in
            try KeychainAttributes.search(attributes, unlock: unlock, loadSecrets: true)
        }
        if found.isEmpty { throw .failure("nothing matches", status: .notFound) }
        if !all { found = Array(found.prefix(1)) }
        if json {
            try Output.jsonArray(found) { Output.describe($0, includingSecret: true) }
        } else {
            for match in found {
                var text = "[\(match.path)]\nlabel = \(match.label)\n"
                if let secret = match.secret { text += "secret = \(String(decoding: secret, as: UTF8.self))\n" }
                text += "created = \(match.created)\nmodified = \(match.modified)\n"
                for (name, value) in match.attributes.sorted(by: { $0.key < $1.key }) { text += "attribute.\(name) = \(value)\n" }
                Terminal.writeOutput(text)
            }
        }
    }

    /// One word: the items whose service, account or label contains it, ignoring case.
    private static func findText(_ text: String, json: Bool) throws(CommandLineError) {
        let needle = text.lowercased()
        let printed = try Output.allPrinted(json: json) { item in
            [item.service, item.account, item.label].contains { $0.lowercased().contains(needle) }
        }
        if printed.isEmpty && !json { throw .failure("nothing matches '\(text)'", status: .notFound) }
        Output.write(printed, json: json)
    }
}
