/// A `--long` option as a verb declares it, typed by what reading it back from a
/// ``ParsedCommand`` gives: `Bool` for a flag, `String?` for an option with a value, `[String]`
/// for one that may be given several times.
///
/// As with ``Positional``, a verb reads its options only through these (`parsed[Self.label]`).
struct LongOption<Value>: OptionDeclaration {
    /// What the parser, `--help`, the completions and the man-page check see.
    let option: CommandSpec.Option

    private init(_ option: CommandSpec.Option) { self.option = option }
}

extension LongOption where Value == Bool {
    /// A flag: given or not, without a value.
    init(_ name: String, help: String) { self.init(.init(name: name, value: nil, help: help)) }
}

extension LongOption where Value == String? {
    /// An option with a value (`--label TEXT` or `--label=TEXT`); given twice, the last wins.
    init(_ name: String, value: String, help: String) { self.init(.init(name: name, value: value, help: help)) }
}

extension LongOption where Value == [String] {
    /// An option with a value that may be given several times; its values are kept in order.
    init(_ name: String, value: String, help: String) {
        self.init(.init(name: name, value: value, help: help, repeatable: true))
    }
}

/// What a ``CommandSpec`` lists as one of its options: a ``LongOption`` of any value type.
protocol OptionDeclaration: Sendable {
    /// The option as the parser and `--help` see it.
    var option: CommandSpec.Option { get }
}
