/// A change to the policy that needs the person's consent.
struct PolicyChange: Equatable {
    /// Add (true) or remove (false) the member.
    var add: Bool
    /// The group.
    var group: String
    /// The identity, as written in the policy.
    var identity: String
}
