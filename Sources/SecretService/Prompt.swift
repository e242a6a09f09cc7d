// org.freedesktop.Secret.Prompt

/// A pending prompt. secretd cannot show one yet (pinentry support is to come), so `Prompt`
/// completes it as dismissed at once: clients get a clear "dismissed" instead of a hang.
final class Prompt {
    /// The client that received it; nobody else may use it.
    let owner: String
    /// What the result variant would carry on success (for Unlock: the objects).
    let emptyResult: DBusValue

    init(owner: String, emptyResult: DBusValue) {
        self.owner = owner
        self.emptyResult = emptyResult
    }
}
