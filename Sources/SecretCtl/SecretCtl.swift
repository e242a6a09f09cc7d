import FoundationEssentials
import KeychainCore
import Keychain

/// `secretctl`: the command line over the Keychain library.
///
/// `main.swift` only calls ``run(_:)``; everything else is here and in the declarations of
/// ``commands``, so tests can drive it in-process too.
public enum SecretCtl {
    static let group = CommandSpec.Option(name: "group", value: "GROUP", help: "Use this access group.")
    static let json = CommandSpec.Option(name: "json", value: nil, help: "Print JSON (keys are documented in secretctl(1)).")
    static let service = CommandSpec.Argument(name: "SERVICE", help: "The service, e.g. com.example.mail.")
    static let account = CommandSpec.Argument(name: "ACCOUNT", help: "The account, e.g. alice@example.com.")
    static let pairs = CommandSpec.Argument(name: "ATTRIBUTE VALUE", help: "Attribute names and values, in pairs.", variadic: true)

    /// The verbs that have a type of their own (``Verb``); the others are still in `Commands`.
    static let verbs: [any Verb.Type] = [
        SetCommand.self, GetCommand.self, DeleteCommand.self, ListCommand.self, ShowCommand.self,
        SearchCommand.self, StoreCommand.self, LookupCommand.self, ClearCommand.self,
        GenerateCommand.self, StatusCommand.self, LockCommand.self, UnlockCommand.self, PasswdCommand.self,
        ExportCommand.self, ImportCommand.self, GitCredentialCommand.self, LoginCommand.self, WhoamiCommand.self, GroupsCommand.self, SetupCommand.self,
    ]

    /// Every verb, in the order `--help` lists them.
    public static let commands: [CommandSpec] = [
        SetCommand.spec,
        GetCommand.spec,
        DeleteCommand.spec,
        ListCommand.spec,
        ShowCommand.spec,
        SearchCommand.spec,
        StoreCommand.spec,
        LookupCommand.spec,
        ClearCommand.spec,
        GenerateCommand.spec,
        StatusCommand.spec,
        LockCommand.spec,
        UnlockCommand.spec,
        PasswdCommand.spec,
        ExportCommand.spec,
        ImportCommand.spec,
        GitCredentialCommand.spec,
        LoginCommand.spec,
        WhoamiCommand.spec,
        GroupsCommand.spec,
        SetupCommand.spec,
        CommandSpec(
            name: "completions", abstract: "Print the completion script for bash, zsh or fish.",
            arguments: [.init(name: "SHELL", help: "bash, zsh or fish.")], options: [],
            examples: [
                "secretctl completions bash > /etc/bash_completion.d/secretctl",
                "secretctl completions fish > ~/.config/fish/completions/secretctl.fish",
            ]),
    ]

    /// Runs a command line (`arguments[0]` is the program) and returns the exit status.
    public static func run(_ arguments: [String]) -> Int32 {
        let words = Array(arguments.dropFirst())
        do {
            try dispatch(words)
            return ExitStatus.success.rawValue
        } catch {
            if let message = error.message { Terminal.writeError(message + "\n") }
            return error.status.rawValue
        }
    }

    private static func dispatch(_ words: [String]) throws(CommandLineError) {
        guard let verb = words.first, verb != "--help", verb != "-h", verb != "help" else {
            Terminal.writeOutput(Help.overview(commands))
            return
        }
        if verb == "--version" {
            Terminal.writeOutput("secretctl \(KeychainVersion.current)\n")
            return
        }
        guard let spec = commands.first(where: { $0.name == verb }) else {
            throw .usage("unknown command '\(verb)'", command: nil)
        }
        let rest = Array(words.dropFirst())
        let options = rest.prefix { $0 != "--" }  // what follows -- is arguments (login's command)
        if options.contains("--help") || options.contains("-h") {
            Terminal.writeOutput(Help.command(spec))
            return
        }
        if let type = verbs.first(where: { $0.spec.name == verb }) {
            try type.run(try type.parse(rest))
            return
        }
        try Commands.run(spec.name, try ParsedCommand.parse(rest, for: spec))
    }
}
