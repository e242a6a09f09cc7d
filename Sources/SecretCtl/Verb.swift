/// One `secretctl` verb: its declaration and what it does, together in one file under
/// `Commands/`.
///
/// ``SecretCtl/verbs`` lists every verb type in help order; the dispatcher finds the verb by
/// ``CommandSpec/name`` there, so adding a verb is its file, one line in that list and its
/// entry in secretctl(1) (which `ParserTests` checks).
protocol Verb: Sendable {
    /// The verb's declaration, which the parser, `--help`, the completions and the man-page
    /// check read.
    static var spec: CommandSpec { get }

    /// Parses the words after the verb. The default parses them against ``spec``; a verb
    /// overrides it only to explain a usage error in its own terms.
    static func parse(_ words: [String]) throws(CommandLineError) -> ParsedCommand

    /// Does the verb's work, for a command line parsed against ``spec``.
    static func run(_ parsed: ParsedCommand) throws(CommandLineError)
}

extension Verb {
    /// Parses `words` against ``spec``.
    static func parse(_ words: [String]) throws(CommandLineError) -> ParsedCommand {
        try ParsedCommand.parse(words, for: spec)
    }
}
