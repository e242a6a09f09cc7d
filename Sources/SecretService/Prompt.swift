// org.freedesktop.Secret.Prompt

import Pinentry
import SecretStore
import DBusValues

/// A pending prompt: what the client asked for that needs a person's password.
final class Prompt {
    /// What completing the prompt does.
    enum Action {
        /// Unlock these collections, then ask whether the client may use items of these `ask`
        /// groups; the result lists `objects` (the paths the client asked for).
        case unlock(collections: [Store.CollectionRecord], groups: [String], objects: [String])
        /// Create a collection with this label (and alias, if not empty) under a new password.
        case createCollection(label: String, alias: String)
        /// Change a collection's password: ask for the current one, then a new one.
        case changePassword(Store.CollectionRecord)
        /// Change the access group policy, once the person confirms with the login password.
        case changePolicy(PolicyChange)
    }

    /// The client that received it; nobody else may use it.
    let owner: String
    let action: Action
    /// Set once the prompt has completed (or been dismissed); later results are dropped.
    var finished = false
    /// Set by the first `Prompt()` call; later ones do not ask again.
    var started = false
    /// Ends the pinentry conversation when the prompt ends early: dismissed, or its client gone.
    let cancellation = PinentryCancellation()
    /// Who asks, as the pinentry dialog names them ("An application" when nil).
    let requester: String?
    /// Called with the result (nil: dismissed) instead of sending `Completed`, for a prompt
    /// secretd runs for a call of its own (the portal's), which no client calls `Prompt` on.
    let completion: ((DBusValue?) -> Void)?

    init(owner: String, action: Action, requester: String? = nil, completion: ((DBusValue?) -> Void)? = nil) {
        self.owner = owner
        self.action = action
        self.requester = requester
        self.completion = completion
    }

    /// The result variant of a dismissed prompt, typed as the operation's result would be.
    var emptyResult: DBusValue {
        switch action {
        case .unlock: return .objectPaths([])
        case .createCollection: return .objectPath(ObjectPaths.none)
        case .changePassword: return .string("")
        // libsecret hands back the result even of a dismissed prompt: make it say so.
        case .changePolicy: return .boolean(false)
        }
    }
}
