import KeychainCore

/// `secretctl`: the command line over the Keychain library.
///
/// `main.swift` only calls ``run(_:)``; everything else is here and in the verbs of ``verbs``,
/// each a ``Verb`` in its own file under `Commands/`, so tests can drive it in-process too.
public enum SecretCtl {
    /// Every verb, in the order `--help` lists them. The dispatcher finds a verb here by its
    /// name; help, the completions and the man-page check read their declarations from here.
    static let verbs: [any Verb.Type] = [
        SetCommand.self,
        GetCommand.self,
        DeleteCommand.self,
        ListCommand.self,
        ShowCommand.self,
        SearchCommand.self,
        StoreCommand.self,
        LookupCommand.self,
        ClearCommand.self,
        GenerateCommand.self,
        StatusCommand.self,
        LockCommand.self,
        UnlockCommand.self,
        PasswdCommand.self,
        ExportCommand.self,
        ImportCommand.self,
        GitCredentialCommand.self,
        LoginCommand.self,
        WhoamiCommand.self,
        GroupsCommand.self,
        AppKeysCommand.self,
        PinCommand.self,
        TpmCommand.self,
        CheckCommand.self,
        BackupCommand.self,
        AuditCommand.self,
        ConsentCommand.self,
        RunCommand.self,
        RestoreCommand.self,
        SyncCommand.self,
        HistoryCommand.self,
        SshCommand.self,
        SshAgentCommand.self,
        SetupCommand.self,
        CompletionsCommand.self,
    ]

    /// Every verb's declaration, in the order `--help` lists them.
    public static let commands: [CommandSpec] = verbs.map { $0.spec }

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
        guard let name = words.first, name != "--help", name != "-h", name != "help" else {
            Terminal.writeOutput(Help.overview(commands))
            return
        }
        if name == "--version" {
            Terminal.writeOutput("secretctl \(KeychainVersion.current)\n")
            return
        }
        guard let verb = verb(named: name) else {
            throw .usage("unknown command '\(name)'", command: nil)
        }
        let rest = Array(words.dropFirst())
        let options = rest.prefix { $0 != "--" }  // what follows -- is arguments (login's command)
        if options.contains("--help") || options.contains("-h") {
            Terminal.writeOutput(Help.command(verb.spec))
            return
        }
        try verb.run(try verb.parse(rest))
    }

    /// The verb called `name`, from ``verbs``.
    static func verb(named name: String) -> (any Verb.Type)? {
        verbs.first { $0.spec.name == name }
    }
}
