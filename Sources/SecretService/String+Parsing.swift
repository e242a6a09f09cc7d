// Text helpers for the configuration and policy parsers, on the standard library alone
// (secretd links FoundationEssentials, which has no CharacterSet; trimming is in KeychainCore).



extension String {
    /// The lines of a configuration file, split at each `\n` Unicode scalar, so that a
    /// `\r\n` ends a line too (Swift's `String` holds it as one `Character`, which
    /// `split(separator: "\n")` never matches); the `\r` stays at the end of its line, where
    /// the parsers trim it away.
    var lines: [String] {
        unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false).map { String(String.UnicodeScalarView($0)) }
    }
}

extension Unicode.Scalar {
    /// Whether the scalar is a control or format character (Unicode categories Cc and Cf) or
    /// a line break: nothing that should appear inside a one-line name.
    var isUnprintable: Bool {
        switch properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator: true
        default: false
        }
    }

    /// Whether the scalar is an ASCII letter or digit.
    var isASCIIAlphanumeric: Bool {
        ("a"..."z").contains(self) || ("A"..."Z").contains(self) || ("0"..."9").contains(self)
    }
}
