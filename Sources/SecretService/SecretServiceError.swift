import KeychainCore
import SecretStore

/// Errors returned to D-Bus callers; each has the name clients match on.
public enum SecretServiceError: Error, Equatable {
    /// The object must be unlocked first.
    case isLocked(String)
    /// The session does not exist or belongs to another client.
    case noSession(String)
    /// No such item, collection or prompt.
    case noSuchObject(String)
    /// Arguments of the right D-Bus type but unacceptable value.
    case invalidArgs(String)
    /// The session algorithm is not supported (libsecret then falls back to `plain`).
    case notSupported(String)
    /// The caller may not do this (a wrong password; gnome-keyring's error name).
    case accessDenied(String)
    /// The caller may never do this: another user, or an access group it is not in.
    case forbidden(String)
    /// The client has too many sessions or prompts open (see secretd(1), LIMITS).
    case limitsExceeded(String)
    /// The object has no such method (`org.freedesktop.DBus.Error.UnknownMethod`).
    case unknownMethod(String)
    /// The object has no such interface.
    case unknownInterface(String)
    /// The interface has no such property.
    case unknownProperty(String)
    /// The property cannot be written.
    case propertyReadOnly(String)
    /// The database cannot be used (damaged, or from a newer secretd) and was left as it is;
    /// the message names the file and what to do (``RefusingService``).
    case unusableDatabase(String)
    /// Anything else; the message is safe to show (no secrets).
    case failed(String)
    /// Not an answer: the call's write met a large item's write holding the database's write
    /// lock, and the call runs again once that write ends (``BusServer``, ``CallRouter``), so
    /// that waiting for it does not hold up the main loop. No client is sent it.
    case waitForWrite

    /// The D-Bus error name.
    public var dbusName: String {
        switch self {
        case .isLocked: return SecretServiceNames.ErrorName.isLocked
        case .noSession: return SecretServiceNames.ErrorName.noSession
        case .noSuchObject: return SecretServiceNames.ErrorName.noSuchObject
        case .invalidArgs: return "org.freedesktop.DBus.Error.InvalidArgs"
        case .notSupported: return "org.freedesktop.DBus.Error.NotSupported"
        case .accessDenied: return SecretServiceNames.ErrorName.denied
        case .forbidden: return "org.freedesktop.DBus.Error.AccessDenied"
        case .limitsExceeded: return "org.freedesktop.DBus.Error.LimitsExceeded"
        case .unknownMethod: return "org.freedesktop.DBus.Error.UnknownMethod"
        case .unknownInterface: return "org.freedesktop.DBus.Error.UnknownInterface"
        case .unknownProperty: return "org.freedesktop.DBus.Error.UnknownProperty"
        case .propertyReadOnly: return "org.freedesktop.DBus.Error.PropertyReadOnly"
        case .unusableDatabase: return SecretServiceNames.ErrorName.unusableDatabase
        case .failed, .waitForWrite: return "org.freedesktop.DBus.Error.Failed"
        }
    }

    /// What a caller is told when secretd could not do what it asked (a failed commit or an
    /// unreadable store); the details go to the log only.
    static let incomplete = SecretServiceError.failed("secretd could not complete the operation; see its log")

    /// The message sent with the error.
    public var message: String {
        switch self {
        case .isLocked(let message), .noSession(let message), .noSuchObject(let message),
            .invalidArgs(let message), .notSupported(let message),
            .accessDenied(let message), .forbidden(let message), .limitsExceeded(let message),
            .unknownMethod(let message), .unknownInterface(let message), .unknownProperty(let message),
            .propertyReadOnly(let message), .unusableDatabase(let message), .failed(let message):
            return message
        case .waitForWrite:
            return "secretd is busy writing; try again"
        }
    }
}

extension SecretServiceError {
    /// The error a client gets when the store failed; the detail is logged, not sent.
    init(storeFailure error: StoreError) {
        switch error {
        case .notFound: self = .noSuchObject("no such object")
        case .invalidInput(let message): self = .invalidArgs(message)
        case .wrongPassword: self = .accessDenied("the password is wrong")
        case .locked: self = .isLocked("the keyring is locked")
        case .busy: self = .waitForWrite  // not logged: the call runs again
        case .overQuota(let limit):
            Log.warning("refused a write over the quota (\(limit))")
            self = .limitsExceeded("the write would go over secretd.conf's \(limit) (see secretd.conf(5)); nothing was written")
        case .noSpace:
            Log.error("storage error: \(error)")
            self = .failed("the disk holding secretd's database is full: nothing was written; free some space and try again")
        case .readOnly:
            Log.error("storage error: \(error)")
            self = .failed("the file system holding secretd's database is read-only: nothing was written; reads go on")
        case .corrupted:
            Log.error("storage error: \(error)")
            self = .failed("the item's stored data is damaged and cannot be opened; see secretd's log")
        default:
            Log.error("storage error: \(error)")
            self = .incomplete
        }
    }
}
