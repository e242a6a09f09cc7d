/// `secretctl completions SHELL`: the completion script for bash, zsh or fish, generated from
/// every verb's declaration (``Completions``).
enum CompletionsCommand: Verb {
    /// `SHELL`: bash, zsh or fish.
    static let shell = Positional<String>("SHELL", help: "bash, zsh or fish.")

    static let spec = CommandSpec(
        name: "completions", abstract: "Print the completion script for bash, zsh or fish.",
        arguments: [shell], options: [],
        examples: [
            "secretctl completions bash > /etc/bash_completion.d/secretctl",
            "secretctl completions fish > ~/.config/fish/completions/secretctl.fish",
        ])

    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        guard let script = Completions.script(for: parsed[Self.shell], SecretCtl.commands) else {
            throw .usage("completions are available for bash, zsh and fish", command: spec.name)
        }
        Terminal.writeOutput(script)
    }
}
