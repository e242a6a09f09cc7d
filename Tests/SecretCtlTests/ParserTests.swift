import Foundation
import Keychain
import KeychainCore
import Testing

@testable import SecretCtl

@Suite struct ParserTests {
    let show = SecretCtl.commands.first { $0.name == "show" }!
    let list = SecretCtl.commands.first { $0.name == "list" }!

    @Test("arguments, valued options (both spellings) and flags")
    func parses() throws {
        let parsed = try ParsedCommand.parse(["--json", "svc", "--group", "g", "acct", "--reveal"], for: show)
        #expect(parsed.arguments == ["SERVICE": "svc", "ACCOUNT": "acct"])
        #expect(parsed.values == ["group": "g"])
        #expect(parsed.flags == ["json", "reveal"])
        #expect(try ParsedCommand.parse(["--group=x", "s", "a"], for: show).values == ["group": "x"])
        #expect(try ParsedCommand.parse(["--", "--odd-service", "a"], for: show).arguments["SERVICE"] == "--odd-service")
        #expect(try ParsedCommand.parse([], for: list).arguments.isEmpty)
    }

    @Test("a variadic last argument takes the remaining words")
    func variadic() throws {
        let store = SecretCtl.commands.first { $0.name == "store" }!
        let parsed = try ParsedCommand.parse(["--label", "L", "service", "s", "user", "u"], for: store)
        #expect(parsed.rest == ["service", "s", "user", "u"])
        #expect(parsed.values == ["label": "L"])
        #expect(store.usage.hasSuffix("ATTRIBUTE VALUE..."))
    }

    @Test("typed declarations read back what the parser took, typed by the declaration")
    func typedReads() throws {
        let file = Positional<String>("FILE", help: "A file.")
        let shell = Positional<String?>("SHELL", help: "A shell.")
        let words = Positional<[String]>("WORD", help: "Words.", optional: true)
        let force = LongOption<Bool>("force", help: "Force.")
        let label = LongOption<String?>("label", value: "TEXT", help: "A label.")
        let attributes = LongOption<[String]>("attr", value: "NAME=VALUE", help: "Attributes.")
        let spec = CommandSpec(
            name: "try", abstract: "Try.", arguments: [file, shell, words], options: [force, label, attributes], examples: [])
        #expect(spec.usage == "secretctl try [--force] [--label TEXT] [--attr NAME=VALUE] FILE [SHELL] [WORD]")
        #expect(spec.arguments.map(\.optional) == [false, true, true])
        #expect(spec.arguments.map(\.variadic) == [false, false, true])
        #expect(spec.options.map(\.repeatable) == [false, false, true])

        let parsed = try ParsedCommand.parse(
            ["--attr", "a=1", "f.txt", "--label", "L", "bash", "w1", "--force", "--attr=b=2", "w2"], for: spec)
        let path: String = parsed[file]  // a required argument is a String, not an optional
        #expect(path == "f.txt")
        #expect(parsed[shell] == "bash")
        #expect(parsed[words] == ["w1", "w2"])
        #expect(parsed[force])
        #expect(parsed[label] == "L")
        #expect(parsed[attributes] == ["a=1", "b=2"])

        let bare = try ParsedCommand.parse(["f.txt"], for: spec)
        #expect(bare[file] == "f.txt")
        #expect(bare[shell] == nil)
        #expect(bare[words].isEmpty)
        #expect(!bare[force])
        #expect(bare[label] == nil)
        #expect(bare[attributes].isEmpty)
        #expect(throws: CommandLineError.usage("missing FILE", command: "try")) { try ParsedCommand.parse([], for: spec) }
    }

    @Test("login's command is every word after --, taken as it is; the -- is required")
    func afterSeparator() throws {
        let login = SecretCtl.commands.first { $0.name == "login" }!
        let parsed = try ParsedCommand.parse(["--account", "a", "svc", "--remember", "--", "cmd", "--help", "--", "x"], for: login)
        #expect(parsed.arguments == ["SERVICE": "svc"])
        #expect(parsed.values == ["account": "a"])
        #expect(parsed.flags == ["remember"])
        #expect(parsed.rest == ["cmd", "--help", "--", "x"])
        #expect(login.usage.hasSuffix(" SERVICE -- COMMAND [ARGS...]"))
        #expect(throws: CommandLineError.usage("missing -- COMMAND [ARGS...]", command: "login")) {
            try ParsedCommand.parse(["svc", "cmd"], for: login)
        }
        #expect(throws: CommandLineError.usage("missing -- COMMAND [ARGS...]", command: "login")) {
            try ParsedCommand.parse(["svc", "--"], for: login)
        }
        #expect(throws: CommandLineError.usage("missing SERVICE", command: "login")) {
            try ParsedCommand.parse(["--", "cmd"], for: login)
        }
        #expect(throws: CommandLineError.usage("too many arguments", command: "login")) {
            try ParsedCommand.parse(["svc", "extra", "--", "cmd"], for: login)
        }
    }

    @Test("--reject-exit takes statuses 1 to 255, separated by commas")
    func rejectExit() throws {
        #expect(try LoginCommand.rejectionStatuses("1") == [1])
        #expect(try LoginCommand.rejectionStatuses("1, 77,255") == [1, 77, 255])
        for wrong in ["0", "256", "x", "", "1,,2", "-1"] {
            #expect(throws: CommandLineError.self, "\(wrong)") { try LoginCommand.rejectionStatuses(wrong) }
        }
    }

    @Test("usage errors name the problem and the verb")
    func usageErrors() {
        #expect(throws: CommandLineError.usage("unknown option '--nope'", command: "show")) {
            try ParsedCommand.parse(["--nope", "s", "a"], for: show)
        }
        #expect(throws: CommandLineError.usage("missing ACCOUNT", command: "show")) { try ParsedCommand.parse(["s"], for: show) }
        #expect(throws: CommandLineError.usage("too many arguments", command: "show")) {
            try ParsedCommand.parse(["s", "a", "b"], for: show)
        }
        #expect(throws: CommandLineError.usage("--group needs a value", command: "show")) {
            try ParsedCommand.parse(["s", "a", "--group"], for: show)
        }
        #expect(throws: CommandLineError.usage("--json takes no value", command: "show")) {
            try ParsedCommand.parse(["--json=yes", "s", "a"], for: show)
        }
    }

    @Test("every verb's help shows its usage, arguments and options")
    func help() {
        for spec in SecretCtl.commands {
            let text = Help.command(spec)
            #expect(text.contains("USAGE: \(spec.usage)"))
            for option in spec.options { #expect(text.contains("--\(option.name)")) }
            for argument in spec.arguments { #expect(text.contains(argument.name)) }
        }
        let overview = Help.overview(SecretCtl.commands)
        for spec in SecretCtl.commands { #expect(overview.contains("  \(spec.name) ")) }
    }

    @Test("library errors map to the documented exit statuses")
    func exitStatuses() {
        #expect(CommandLineError(.locked).status == .locked)
        #expect(CommandLineError(.cancelled).status == .locked)
        #expect(CommandLineError(.accessDenied(message: "no")).status == .accessDenied)
        #expect(CommandLineError(.noProvider(reason: "x")).status == .noProvider)
        #expect(CommandLineError(.noPrompter(reason: "x")).status == .locked)
        #expect(CommandLineError(.invalidInput(.empty(field: "service"))).status == .usage)
    }

    @Test("secretctl(1) documents every verb and option")
    func manPage() throws {
        let page = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("man/secretctl.1")
        let text = try String(contentsOf: page, encoding: .utf8)
        let synopses = Self.synopsisOptions(in: text)
        for spec in SecretCtl.commands {
            let verb = spec.name.replacingOccurrences(of: "-", with: "\\-")  // hyphens are escaped in roff
            #expect(text.contains(".It Cm \(verb)"), "verb \(spec.name) has no entry")
            // The SYNOPSIS lines of the verb name exactly its options: none missing, none stale.
            #expect(synopses[spec.name] == Set(spec.options.map(\.name)), "SYNOPSIS options of \(spec.name)")
        }
        #expect(Set(synopses.keys) == Set(SecretCtl.commands.map(\.name)), "verbs in the SYNOPSIS")
    }

    /// The options each verb's SYNOPSIS lines name (`.Nm`, `.Cm verb`, then `Fl \-option` until
    /// the next `.Nm`), by verb; a verb with several lines gets the union.
    static func synopsisOptions(in page: String) -> [String: Set<String>] {
        guard let start = page.range(of: ".Sh SYNOPSIS\n"), let end = page.range(of: "\n.Sh ", range: start.upperBound..<page.endIndex)
        else { return [:] }
        var options: [String: Set<String>] = [:]
        var verb: String?
        for line in page[start.upperBound..<end.lowerBound].split(separator: "\n") {
            if line == ".Nm" {
                verb = nil
            } else if verb == nil, line.hasPrefix(".Cm ") {
                let name = String(line.dropFirst(".Cm ".count).prefix { $0 != " " }).replacingOccurrences(of: "\\-", with: "-")
                verb = name
                options[name, default: []].formUnion([])
            } else if let verb {
                // Every `Fl \-name` of the line (`Fl \-remember | Fl \-no\-remember`); a bare
                // `Fl \-` is login's separator, not an option.
                for part in line.components(separatedBy: "Fl \\-").dropFirst() {
                    let name = part.prefix { $0 != " " }.replacingOccurrences(of: "\\-", with: "-")
                    if !name.isEmpty { options[verb, default: []].insert(name) }
                }
            }
        }
        return options
    }
}

@Suite struct PasswordGeneratorTests {
    @Test("passwords have the asked length and use only the asked characters")
    func generate() throws {
        for name in ["alnum", "alpha", "digits", "printable"] {
            let alphabet = try #require(PasswordGenerator.alphabet(named: name))
            let password = try PasswordGenerator.generate(length: 200, alphabet: alphabet)
            #expect(password.count == 200)
            #expect(password.allSatisfy(alphabet.contains))
        }
        #expect(PasswordGenerator.alphabet(named: "emoji") == nil)
        let first = try PasswordGenerator.generate(length: 32, alphabet: PasswordGenerator.alphabet(named: "alnum")!)
        let second = try PasswordGenerator.generate(length: 32, alphabet: PasswordGenerator.alphabet(named: "alnum")!)
        #expect(first != second)
    }
}
