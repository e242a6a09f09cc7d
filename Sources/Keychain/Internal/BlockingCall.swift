import FoundationEssentials

/// Runs a blocking libsecret call on a thread of its own, so `async` callers never block the
/// cooperative thread pool (an unlock prompt can stay open for as long as the user takes).
/// Cancelling the calling task cancels the libsecret call, which then throws `.cancelled`.
enum BlockingCall {
    /// Runs `body` on a new thread and resumes with its result.
    static func run<T: Sendable>(
        _ body: @escaping @Sendable () throws(KeychainError) -> T
    ) async throws(KeychainError) -> T {
        let cancellation = LibSecret.Cancellation()
        let result: Result<T, KeychainError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                cancellation.run(on: "keychain-call") {
                    continuation.resume(returning: Result { () throws(KeychainError) in try body() })
                }
            }
        } onCancel: {
            cancellation.cancel()
        }
        return try result.get()
    }
}
