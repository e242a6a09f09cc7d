// org.freedesktop.Secret.Prompt

import DBusValues

extension Introspection {
    /// org.freedesktop.Secret.Prompt, for the client that owns the prompt.
    static let promptInterface = BusInterface(name: prompt, objects: .prompt, methods: [
        Method(name: "Prompt", rule: .objectOwner, arguments: [Argument(name: "window-id", type: "s")],
               handler: .now { provider, call throws(SecretServiceError) in
                   PromptObject(provider).start(try call.promptID())
                   return .tuple([])
               }),
        Method(name: "Dismiss", rule: .objectOwner, handler: .now { provider, call throws(SecretServiceError) in
            PromptObject(provider).dismiss(try call.promptID())
            return .tuple([])
        }),
    ], signals: [
        Signal(name: "Completed", arguments: [Argument(name: "dismissed", type: "b"), Argument(name: "result", type: "v")]),
    ])
}

/// A client's prompt: `Prompt` starts the conversation with the person (Provider+Prompt.swift),
/// `Dismiss` ends it.
struct PromptObject {
    /// What every object shares.
    let provider: Provider

    /// The object over `provider`.
    init(_ provider: Provider) { self.provider = provider }

    /// `Prompt`: the conversation starts (once: calling it again does not ask again).
    func start(_ id: Int) {
        guard let prompt = provider.prompts[id], !prompt.started else { return }
        provider.startConversation(promptID: id)
    }

    /// `Dismiss`: the prompt completes as dismissed, after the reply.
    func dismiss(_ id: Int) {
        MainLoop.after(seconds: 0) { [weak provider = provider] in provider?.complete(id: id, result: nil) }
    }
}
