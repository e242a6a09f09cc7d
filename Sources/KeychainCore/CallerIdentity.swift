/// Who a client process is, for access groups: the strongest name the kernel vouches for.
///
/// Written `flatpak:ID`, `snap:NAME`, `unit:NAME` or `exe:PATH`, the form members take in
/// `access-groups.conf` and on secretctl's command line. secretd resolves it from `/proc/PID`
/// (CallerIdentity+Resolution.swift in SecretService); the text form and its rule are here so
/// that secretctl accepts exactly what secretd does.
package struct CallerIdentity: Hashable, Sendable, CustomStringConvertible {
    /// The kinds of identity, strongest first.
    package enum Kind: String, CaseIterable, Sendable {
        case flatpak, snap, unit, exe
    }

    /// What kind of name this is.
    package var kind: Kind
    /// The app id, snap name, unit name or executable path.
    package var name: String

    /// `kind:name`.
    package var description: String { "\(kind.rawValue):\(name)" }

    /// Parses `kind:name`; nil when the kind is unknown or the name empty (or, for `exe`, not
    /// an absolute path).
    ///
    /// Only names that `access-groups.conf` can hold are accepted, so that a member written
    /// to the file reads back as the same identity: no control characters or line breaks
    /// (a newline would start a line of its own, such as another `member =`), and no
    /// whitespace, except inside an executable's path (not at either end).
    package init?(parsing text: String) {
        guard let colon = text.firstIndex(of: ":"), let kind = Kind(rawValue: String(text[..<colon])) else { return nil }
        let name = String(text[text.index(after: colon)...])
        let scalars = name.unicodeScalars
        guard let first = scalars.first, let last = scalars.last, !scalars.contains(where: \.isUnprintable),
            kind == .exe
                ? !first.properties.isWhitespace && !last.properties.isWhitespace
                : !scalars.contains(where: \.properties.isWhitespace),
            kind != .exe || name.hasPrefix("/")
        else { return nil }
        self.init(kind: kind, name: name)
    }

    /// An identity of this kind and name.
    package init(kind: Kind, name: String) {
        self.kind = kind
        self.name = name
    }
}
