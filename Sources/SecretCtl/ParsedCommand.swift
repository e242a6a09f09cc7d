/// A command line parsed against a ``CommandSpec``.
public struct ParsedCommand: Equatable, Sendable {
    /// The positional arguments, by their spec names.
    public var arguments: [String: String] = [:]
    /// The options given with a value, by name.
    public var values: [String: String] = [:]
    /// The flags given.
    public var flags: Set<String> = []
    /// The words taken by a variadic last argument (or by one after `--`, as they are).
    public var rest: [String] = []
    /// Every value of a repeatable option, in order.
    public var lists: [String: [String]] = [:]

    /// Parses `words` (the words after the verb) for `spec`.
    ///
    /// `--` ends the options; what follows is positional. For a spec whose last argument is
    /// ``CommandSpec/Argument/afterSeparator``, the first `--` is required and every word after it
    /// goes to ``rest`` unparsed.
    ///
    /// - Throws: ``CommandLineError/usage(_:command:)`` for an unknown option, a missing value or
    ///   argument, or too many arguments.
    public static func parse(_ words: [String], for spec: CommandSpec) throws(CommandLineError) -> ParsedCommand {
        var parsed = ParsedCommand()
        var arguments = spec.arguments
        var words = words
        if let trailing = arguments.last, trailing.afterSeparator {
            guard let separator = words.firstIndex(of: "--"), separator + 1 < words.count else {
                throw .usage("missing -- \(trailing.name)", command: spec.name)
            }
            parsed.rest = Array(words[(separator + 1)...])
            words = Array(words[..<separator])
            arguments.removeLast()
        }
        var positionals: [String] = []
        var index = 0
        var optionsEnded = false
        while index < words.count {
            let word = words[index]
            index += 1
            if !optionsEnded && word == "--" {
                optionsEnded = true
                continue
            }
            guard !optionsEnded, word.hasPrefix("--"), word.count > 2 else {
                positionals.append(word)
                continue
            }
            var name = String(word.dropFirst(2))
            var inlineValue: String?
            if let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            guard let option = spec.options.first(where: { $0.name == name }) else {
                throw .usage("unknown option '--\(name)'", command: spec.name)
            }
            if option.value == nil {
                guard inlineValue == nil else { throw .usage("--\(name) takes no value", command: spec.name) }
                parsed.flags.insert(name)
            } else {
                let value: String
                if let inlineValue {
                    value = inlineValue
                } else {
                    guard index < words.count else { throw .usage("--\(name) needs a value", command: spec.name) }
                    value = words[index]
                    index += 1
                }
                parsed.values[name] = value
                if option.repeatable { parsed.lists[name, default: []].append(value) }
            }
        }
        let required = arguments.filter { !$0.optional }.count
        guard positionals.count >= required else {
            let missing = arguments[positionals.count].name
            throw .usage("missing \(missing)", command: spec.name)
        }
        let variadic = arguments.last?.variadic == true
        guard variadic || positionals.count <= arguments.count else {
            throw .usage("too many arguments", command: spec.name)
        }
        let fixed = variadic ? arguments.count - 1 : arguments.count
        for (argument, value) in zip(arguments.prefix(fixed), positionals) { parsed.arguments[argument.name] = value }
        if variadic { parsed.rest = Array(positionals.dropFirst(fixed)) }
        return parsed
    }
}
