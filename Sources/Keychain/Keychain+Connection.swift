extension Keychain {
    /// Drops the cached connection to the provider, so the next call opens a new session.
    ///
    /// The library already retries once when a restarted provider no longer knows its session;
    /// the test harness calls this when it stops or replaces the provider on purpose.
    package static func resetConnection() {
        LibSecret.disconnect()
    }
}
