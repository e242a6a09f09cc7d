/// Whether reading an access group's secrets needs the person's consent (`consent =` in
/// secretd.conf for every group, and in a `[group]` of access-groups.conf for that group).
public enum ReaderConsentMode: String, Equatable, Sendable, CaseIterable {
    /// Members read without being asked (as every Secret Service provider does).
    case no
    /// An identity that the person has not allowed yet is asked before its first read: deny,
    /// allow once, always allow (remembered, bound to the executable).
    case newReaders = "new-readers"

    /// The values, as the configuration files spell them.
    static let names = allCases.map(\.rawValue).joined(separator: " or ")
}
