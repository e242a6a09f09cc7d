// Typed reads of a parsed command line, by the verb's declarations (Positional, LongOption):
// the type of the declaration gives the type of the value, so no call site unwraps or names a
// string key.

extension ParsedCommand {
    /// A required argument's word.
    ///
    /// The parser has refused any command line without it, so it is there whenever the
    /// argument is in the spec the command line was parsed for; reading one the spec does not
    /// list is a mistake in the verb, and stops the program with a message naming it.
    subscript(_ argument: Positional<String>) -> String {
        guard let word = arguments[argument.argument.name] else {
            preconditionFailure("\(argument.argument.name) is read but is not an argument of this verb's spec")
        }
        return word
    }

    /// An optional argument's word, nil when it was left out.
    subscript(_ argument: Positional<String?>) -> String? { arguments[argument.argument.name] }

    /// The words a variadic last argument (or one after `--`) took; empty when there were none.
    subscript(_ argument: Positional<[String]>) -> [String] { rest }

    /// Whether a flag was given.
    subscript(_ option: LongOption<Bool>) -> Bool { flags.contains(option.option.name) }

    /// An option's value, nil when it was not given (the last one when it was given twice).
    subscript(_ option: LongOption<String?>) -> String? { values[option.option.name] }

    /// Every value of a repeatable option, in order; empty when it was not given.
    subscript(_ option: LongOption<[String]>) -> [String] { lists[option.option.name] ?? [] }
}
