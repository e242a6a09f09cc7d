/// A change to the policy that needs the person's consent.
struct PolicyChange: Equatable {
    /// What changes.
    enum Kind: Equatable {
        /// A group's membership, in access-groups.conf (`secretctl groups add-member`).
        case member
        /// A remembered consent to read a group (`secretctl consent allow`).
        case reader
    }

    /// Add (true) or remove (false) the member or the consent.
    var add: Bool
    /// The group.
    var group: String
    /// The identity, as written in the policy.
    var identity: String
    /// What changes.
    var kind: Kind = .member
}
