import CProcess

/// Hands freed heap back to the system (glibc keeps it otherwise): the bus server asks after
/// each call, after a large reply and when a client with a backlog leaves; the trims come at
/// most once a second while calls come in.
final class MemoryTrimmer {
    /// While calls keep coming, freed memory goes back to the system at most this often (s).
    static let interval = 1.0
    private var scheduled = false
    private var usedSinceScheduled = false

    /// Hands freed memory back to the system `seconds` from now, or when the trim already
    /// scheduled runs: 0.2 s after a large reply (or after a client with a backlog of calls
    /// left), and at most once a second while calls come in. A trim that had calls after it
    /// was scheduled is followed by one more, so the last one comes after the memory of the
    /// last call was freed. glibc keeps freed heap otherwise: one search of 100,000 items would
    /// stay resident.
    func trimLater(after seconds: Double = 0.2) {
        guard !scheduled else {
            usedSinceScheduled = true
            return
        }
        scheduled = true
        usedSinceScheduled = false
        MainLoop.after(seconds: seconds) { [weak self] in
            guard let self else { return }
            scheduled = false
            _ = keychain_release_free_memory()
            if usedSinceScheduled { trimLater(after: Self.interval) }
        }
    }
}
