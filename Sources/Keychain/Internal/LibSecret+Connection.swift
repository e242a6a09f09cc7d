// libsecret's shared connection to the provider, with one retry when the provider changed.

internal import CLibSecret
import KeychainCore
import FoundationEssentials
import Glibc

extension LibSecret {
    // MARK: - Connection

    /// Runs `body` with libsecret's shared `SecretService`, retrying once on a fresh connection
    /// when the cached one is stale: the provider was restarted or replaced, so its old unique
    /// bus name is gone (libsecret's proxy stays bound to it) or it no longer knows our session.
    static func withService<T>(
        _ body: (UnsafeMutablePointer<SecretService>) throws(KeychainError) -> T
    ) throws(KeychainError) -> T {
        do {
            return try attemptWithService(body)
        } catch let error where isStaleConnection(error) {
            disconnect()
            return try attemptWithService(body)
        }
    }

    /// Whether `error` means the cached connection points at a provider that is gone.
    private static func isStaleConnection(_ error: KeychainError) -> Bool {
        switch error {
        case .noProvider: return true
        case .backend(let domain, let code, _): return domain == RemoteError.domain && code == RemoteError.noSession.rawValue
        default: return false
        }
    }

    private static func attemptWithService<T>(
        _ body: (UnsafeMutablePointer<SecretService>) throws(KeychainError) -> T
    ) throws(KeychainError) -> T {
        RemoteError.registerOnce()
        var error: UnsafeMutablePointer<GError>?
        // transfer full; opening a session reaches the provider, so a missing one fails here.
        let service = secret_service_get_sync(SECRET_SERVICE_OPEN_SESSION, Cancellation.current, &error)
        if let error {
            if let service { g_object_unref(service) }
            switch takeError(error) {
            case .backend(_, _, let message): throw .noProvider(reason: message)
            case let other: throw other
            }
        }
        guard let service else { throw .noProvider(reason: "libsecret returned no service") }
        defer { g_object_unref(service) }
        return try body(service)
    }
}
