/// The prompts clients asked for and have not completed or dismissed, each owned by the client
/// connection that asked (``Prompt/owner``), at most ``limit`` per client.
final class PromptRegistry {
    private var prompts: [Int: Prompt] = [:]
    private var nextID = 1
    /// How many prompts one client may have open.
    let limit: Int

    /// An empty registry with `limit` prompts per client.
    init(limit: Int) {
        self.limit = limit
    }

    /// Adds `prompt`; returns its object path, or `LimitsExceeded` when its client has ``limit``.
    func add(_ prompt: Prompt) -> Result<String, SecretServiceError> {
        guard prompts.values.lazy.filter({ $0.owner == prompt.owner }).count < limit else {
            return .failure(.limitsExceeded("this connection has \(limit) prompts open; complete or dismiss some first"))
        }
        let id = nextID
        nextID += 1
        prompts[id] = prompt
        return .success(ObjectPaths.prompt(id))
    }

    /// The prompt numbered `id`, if it is open.
    subscript(id: Int) -> Prompt? { prompts[id] }

    /// Closes the prompt numbered `id` (completed or dismissed).
    func remove(_ id: Int) {
        prompts[id] = nil
    }

    /// Closes and returns every prompt of `owner` (a client that left), by number.
    func removeAll(of owner: String) -> [(id: Int, prompt: Prompt)] {
        let owned = prompts.filter { $0.value.owner == owner }.map { (id: $0.key, prompt: $0.value) }
        for (id, _) in owned { prompts[id] = nil }
        return owned
    }

    /// The numbers of the open prompts, in order.
    var ids: [Int] { prompts.keys.sorted() }
}
