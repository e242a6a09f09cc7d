// libsecret's shared connection to the provider, with one retry when the provider changed.

internal import CLibSecret
import KeychainCore
import FoundationEssentials
import Glibc

extension LibSecret {
    // MARK: - Connection

    /// The bus name that this task's calls go to instead of `org.freedesktop.secrets`
    /// (``KeychainProvider/on(busName:_:)``); nil for libsecret's shared connection.
    @TaskLocal static var busNameOverride: String?

    /// The bus name of the provider that this task's calls go to.
    static var providerBusName: String { busNameOverride ?? SecretServiceNames.busName }

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
    static func isStaleConnection(_ error: KeychainError) -> Bool {
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
        let service = if let name = busNameOverride {
            openService(on: name, &error)
        } else {
            secret_service_get_sync(SECRET_SERVICE_OPEN_SESSION, Cancellation.current, &error)
        }
        if let error {
            if let service { g_object_unref(service) }
            switch takeError(error) {
            case .backend(RemoteError.domain, Int(RemoteError.unusableDatabase.rawValue), let message):
                // A provider is there, and says why it serves nothing.
                throw .backend(domain: RemoteError.domain, code: Int(RemoteError.unusableDatabase.rawValue), message: message)
            case .backend(_, _, let message): throw .noProvider(reason: message)
            case let other: throw other
            }
        }
        guard let service else { throw .noProvider(reason: "libsecret returned no service") }
        defer { g_object_unref(service) }
        return try body(service)
    }

    /// A service of this call's own for the provider on `name` (transfer full). libsecret
    /// 0.20.5 ignores `secret_service_open_sync`'s bus name: its constructor reads the name from
    /// `SECRET_SERVICE_BUS_NAME`, so that is set for the call and put back after it. Every
    /// object libsecret makes from the service (collections, items, prompts) takes the name
    /// from it. Changing the environment is not safe beside other threads, so this is for the
    /// command line only (``KeychainProvider/on(busName:_:)``).
    private static func openService(on name: String, _ error: inout UnsafeMutablePointer<GError>?) -> UnsafeMutablePointer<SecretService>? {
        let variable = "SECRET_SERVICE_BUS_NAME"
        let previous = getenv(variable).map { String(cString: $0) }
        setenv(variable, name, 1)
        defer { if let previous { setenv(variable, previous, 1) } else { unsetenv(variable) } }
        return secret_service_open_sync(secret_service_get_type(), name, SECRET_SERVICE_OPEN_SESSION, Cancellation.current, &error)
    }
}
