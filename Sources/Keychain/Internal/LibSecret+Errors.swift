// GError to KeychainError: the one place that knows libsecret's, GIO's and D-Bus's error codes.

internal import CLibSecret
import KeychainCore
import FoundationEssentials
import Glibc

extension LibSecret {
    // MARK: - Errors

    /// D-Bus error names libsecret does not map itself, registered in a private GError domain
    /// so they survive libsecret stripping the remote name from the message.
    enum RemoteError: Int32, CaseIterable {
        case denied = 1
        case noSession = 2
        case accessDenied = 3
        /// secretd's refusal of a damaged or newer database: its message says what to do.
        case unusableDatabase = 4

        static let domain = "keychain-remote-error"

        var dbusName: String {
            switch self {
            case .denied: return SecretServiceNames.ErrorName.denied
            case .noSession: return SecretServiceNames.ErrorName.noSession
            case .accessDenied: return SecretServiceNames.ErrorName.accessDenied
            case .unusableDatabase: return SecretServiceNames.ErrorName.unusableDatabase
            }
        }

        private static let registration: Void = {
            for error in RemoteError.allCases {
                _ = g_dbus_error_register_error(quark, error.rawValue, error.dbusName)
            }
        }()

        static var quark: GQuark { g_quark_from_string(domain) }

        static func registerOnce() { _ = registration }
    }

    /// Turns a GError into a `KeychainError` and frees it.
    static func takeError(_ error: UnsafeMutablePointer<GError>) -> KeychainError {
        defer { g_error_free(error) }
        // libsecret strips remote names already; strip again in case a call path did not.
        _ = g_dbus_error_strip_remote_error(error)
        let domain = error.pointee.domain
        let code = error.pointee.code
        let message = error.pointee.message.map { String(cString: $0) } ?? ""

        if domain == secret_error_get_quark() && code == Int32(SECRET_ERROR_IS_LOCKED.rawValue) {
            return .locked
        }
        if domain == g_io_error_quark() {
            switch code {
            case Int32(G_IO_ERROR_CANCELLED.rawValue): return .cancelled
            case Int32(G_IO_ERROR_CLOSED.rawValue), Int32(G_IO_ERROR_CONNECTION_REFUSED.rawValue),
                Int32(G_IO_ERROR_NOT_FOUND.rawValue), Int32(G_IO_ERROR_BROKEN_PIPE.rawValue),
                Int32(G_IO_ERROR_CONNECTION_CLOSED.rawValue):
                return .noProvider(reason: message)
            default: break
            }
        }
        if domain == g_dbus_error_quark() {
            switch code {
            case Int32(G_DBUS_ERROR_SERVICE_UNKNOWN.rawValue), Int32(G_DBUS_ERROR_NAME_HAS_NO_OWNER.rawValue),
                Int32(G_DBUS_ERROR_NO_SERVER.rawValue), Int32(G_DBUS_ERROR_DISCONNECTED.rawValue),
                Int32(G_DBUS_ERROR_SPAWN_SERVICE_NOT_FOUND.rawValue):
                return .noProvider(reason: message)
            case Int32(G_DBUS_ERROR_ACCESS_DENIED.rawValue), Int32(G_DBUS_ERROR_AUTH_FAILED.rawValue):
                return .accessDenied(message: message)
            default: break
            }
        }
        if domain == RemoteError.quark, let remote = RemoteError(rawValue: code) {
            switch remote {
            case .denied, .accessDenied: return .accessDenied(message: message)
            case .noSession, .unusableDatabase: return .backend(domain: RemoteError.domain, code: Int(code), message: message)
            }
        }
        let domainName = g_quark_to_string(domain).map { String(cString: $0) } ?? "unknown"
        return .backend(domain: domainName, code: Int(code), message: message)
    }
}
