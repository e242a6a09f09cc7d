import FoundationEssentials

/// `--help` text, rendered from the command declarations.
enum Help {
    /// The tool's overview: every verb with its abstract.
    static func overview(_ commands: [CommandSpec]) -> String {
        let width = commands.map(\.name.count).max() ?? 0
        var text = """
            OVERVIEW: Store and read secrets in the Secret Service keyring (secretd, gnome-keyring, ...).

            USAGE: secretctl <command> [options] [arguments]

            COMMANDS:

            """
        for command in commands {
            text += "  " + command.name.padded(to: width + 2) + command.abstract + "\n"
        }
        text += """

            A secret is never taken from the command line: it is typed without echo on a terminal,
            or read from standard input. Exit status: 0 ok, 1 not found, 2 usage, 3 locked or
            cancelled, 4 access denied, 5 no provider, 6 failed.

            See 'secretctl <command> --help' for a command's options; 'secretctl --version' prints the version.

            """
        return text
    }

    /// One verb's help.
    static func command(_ spec: CommandSpec) -> String {
        var text = "OVERVIEW: \(spec.abstract)\n\nUSAGE: \(spec.usage)\n"
        let options = spec.options + [CommandSpec.Option(name: "help", value: nil, help: "Show this help.")]
        let optionNames = options.map { "--\($0.name)" + ($0.value.map { " \($0)" } ?? "") }
        // Names and help line up in one column, at least 16 wide and never cutting a name.
        let width = max(16, (spec.arguments.map(\.name) + optionNames).map { $0.count + 2 }.max() ?? 0)
        if !spec.arguments.isEmpty {
            text += "\nARGUMENTS:\n"
            for argument in spec.arguments {
                text += "  \(argument.name.padded(to: width))\(argument.help)\n"
            }
        }
        text += "\nOPTIONS:\n"
        for (name, option) in zip(optionNames, options) {
            text += "  \(name.padded(to: width))\(option.help)\n"
        }
        if !spec.examples.isEmpty {
            text += "\nEXAMPLES:\n" + spec.examples.map { "  \($0)\n" }.joined()
        }
        return text
    }
}

extension String {
    /// The text with spaces after it up to `width` characters (as it is when longer).
    fileprivate func padded(to width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}
