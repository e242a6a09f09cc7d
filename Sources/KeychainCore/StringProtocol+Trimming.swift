// Trimming without Foundation's CharacterSet, which FoundationEssentials lacks.

extension StringProtocol {
    /// The text without the white space (Unicode's White_Space: spaces, tabs, line breaks)
    /// at either end.
    package var trimmingWhitespace: String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return "" }
        return String(String.UnicodeScalarView(scalars[first...last]))
    }
}
