import Foundation

/// Runs a blocking libsecret call on a thread of its own, so `async` callers never block the
/// cooperative thread pool (an unlock prompt can stay open for as long as the user takes).
enum BlockingCall {
    /// Runs `body` on a new thread and resumes with its result.
    static func run<T: Sendable>(
        _ body: @escaping @Sendable () throws(KeychainError) -> T
    ) async throws(KeychainError) -> T {
        let result: Result<T, KeychainError> = await withCheckedContinuation { continuation in
            let thread = Thread {
                continuation.resume(returning: Result { () throws(KeychainError) in try body() })
            }
            thread.name = "keychain-call"
            thread.start()
        }
        return try result.get()
    }
}
