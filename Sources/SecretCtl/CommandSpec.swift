/// One verb of `secretctl`, declared once: the parser, `--help` and the man-page check all
/// read this.
public struct CommandSpec: Sendable {
    /// The verb (`get`).
    public var name: String
    /// One line saying what it does.
    public var abstract: String
    /// Positional arguments, in order.
    public var arguments: [Argument]
    /// Options the verb takes (besides `--help`).
    public var options: [Option]
    /// Example command lines with a short explanation each.
    public var examples: [String]

    /// A verb's declaration, from the typed declarations its `run` reads back
    /// (``Positional``, ``LongOption``), in the order `--help` shows them. It is the only way
    /// to build one, so every argument and option a verb has is one it can read by type.
    init(
        name: String, abstract: String, arguments: [any ArgumentDeclaration], options: [any OptionDeclaration],
        examples: [String]
    ) {
        self.name = name
        self.abstract = abstract
        self.arguments = arguments.map(\.argument)
        self.options = options.map(\.option)
        self.examples = examples
    }

    /// A positional argument.
    public struct Argument: Sendable {
        /// The placeholder shown in help (`SERVICE`).
        public var name: String
        /// What it is.
        public var help: String
        /// Whether it may be left out.
        public var optional: Bool = false
        /// Whether it takes all remaining words (only the last argument may).
        public var variadic: Bool = false
        /// Whether it takes every word after a required `--`, taken as they are, even words that
        /// look like options (only the last argument may; `login`'s command).
        public var afterSeparator: Bool = false
    }

    /// A `--long` option, with a value or as a flag.
    public struct Option: Sendable {
        /// The name without dashes (`label`).
        public var name: String
        /// The placeholder of its value (`TEXT`); nil for a flag.
        public var value: String?
        /// What it does.
        public var help: String
        /// Whether it may be given several times (values collected in order).
        public var repeatable: Bool = false
    }

    /// The usage line (`secretctl get [--json] SERVICE ACCOUNT`).
    public var usage: String {
        let options = self.options.map { option in "[--\(option.name)\(option.value.map { " \($0)" } ?? "")]" }
        let arguments = self.arguments.map { argument in
            if argument.afterSeparator { return "-- " + argument.name }
            return argument.optional ? "[\(argument.name)]" : argument.name + (argument.variadic ? "..." : "")
        }
        return (["secretctl", name] + options + arguments).joined(separator: " ")
    }
}
