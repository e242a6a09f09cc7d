import KeychainCore

/// `secretctl ssh-agent env`: the shell lines that make secretd's SSH agent the one `ssh` uses,
/// as `ssh-agent -s` prints them (`eval "$(secretctl ssh-agent env)"`).
enum SshAgentCommand: Verb {
    /// `ACTION`: env.
    static let action = Positional<String>("ACTION", help: "env: print the SSH_AUTH_SOCK lines for a shell to eval.")
    /// `--csh`: C shell syntax.
    static let csh = LongOption<Bool>("csh", help: "Print C shell commands (setenv), as ssh-agent -c does.")

    static let spec = CommandSpec(
        name: "ssh-agent", abstract: "Print the shell lines that point SSH_AUTH_SOCK at secretd's SSH agent.",
        arguments: [action], options: [csh], examples: ["eval \"$(secretctl ssh-agent env)\"", "secretctl ssh-agent env --csh"])

    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        guard parsed[Self.action] == "env" else {
            throw .usage("unknown ssh-agent action '\(parsed[Self.action])' (env)", command: spec.name)
        }
        let path = quoted(SSHAgentClient.socketPath)
        Terminal.writeOutput(parsed[Self.csh] ? "setenv SSH_AUTH_SOCK \(path);\n" : "SSH_AUTH_SOCK=\(path); export SSH_AUTH_SOCK;\n")
    }

    /// `path` as a shell word: as it is when it holds only safe characters, else in single quotes.
    static func quoted(_ path: String) -> String {
        let safe = path.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || $0.properties.numericType != nil || "/._-+@%=:,".unicodeScalars.contains($0)) }
        return safe ? path : "'" + path.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''") + "'"
    }
}
