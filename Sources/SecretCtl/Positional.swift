/// A positional argument as a verb declares it, typed by what reading it back from a
/// ``ParsedCommand`` gives: `String` for a required argument, `String?` for one that may be
/// left out, `[String]` for one that takes the remaining words.
///
/// A verb reads its arguments only through these (`parsed[Self.file]`), never by a string
/// key: a misspelt name does not compile, and a required one needs no force-unwrap.
struct Positional<Value>: ArgumentDeclaration {
    /// What the parser, `--help` and the man-page check see.
    let argument: CommandSpec.Argument

    private init(_ argument: CommandSpec.Argument) { self.argument = argument }
}

extension Positional where Value == String {
    /// A required argument; the parser refuses a command line without it.
    init(_ name: String, help: String) { self.init(.init(name: name, help: help)) }
}

extension Positional where Value == String? {
    /// An argument that may be left out.
    init(_ name: String, help: String) { self.init(.init(name: name, help: help, optional: true)) }
}

extension Positional where Value == [String] {
    /// The last argument, taking every remaining word; or, `afterSeparator`, every word after
    /// a required `--`, as they are (`login`'s command).
    init(_ name: String, help: String, optional: Bool = false, afterSeparator: Bool = false) {
        self.init(.init(name: name, help: help, optional: optional, variadic: !afterSeparator, afterSeparator: afterSeparator))
    }
}

/// What a ``CommandSpec`` lists as one of its arguments: a ``Positional`` of any value type.
protocol ArgumentDeclaration: Sendable {
    /// The argument as the parser and `--help` see it.
    var argument: CommandSpec.Argument { get }
}
