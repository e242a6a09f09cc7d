// Text helpers for the configuration and policy parsers, on the standard library alone
// (secretd links FoundationEssentials, which has no CharacterSet; trimming and the scalar classes
// are in KeychainCore).



extension String {
    /// The lines of a configuration file, split at each `\n` Unicode scalar, so that a
    /// `\r\n` ends a line too (Swift's `String` holds it as one `Character`, which
    /// `split(separator: "\n")` never matches); the `\r` stays at the end of its line, where
    /// the parsers trim it away.
    var lines: [String] {
        unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false).map { String(String.UnicodeScalarView($0)) }
    }
}
