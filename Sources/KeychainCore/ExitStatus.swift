/// The exit statuses of `secretctl`, documented under EXIT STATUS in secretctl(1).
///
/// It lives here, not in the command line's target, so that tests of other targets and any
/// other program of the package can name a status (`.locked`) instead of spelling its number.
/// `secretctl login` passes on its command's status, which may be any other number too.
public struct ExitStatus: RawRepresentable, Hashable, Sendable {
    /// The status as the process exits with it.
    public var rawValue: Int32

    /// A status with this number.
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// Success.
    public static let success = ExitStatus(rawValue: 0)
    /// Nothing matched (like `secret-tool lookup`).
    public static let notFound = ExitStatus(rawValue: 1)
    /// A usage error.
    public static let usage = ExitStatus(rawValue: 2)
    /// The keyring is locked, or a prompt was dismissed or could not be shown.
    public static let locked = ExitStatus(rawValue: 3)
    /// The provider refused access.
    public static let accessDenied = ExitStatus(rawValue: 4)
    /// No Secret Service provider on the bus.
    public static let noProvider = ExitStatus(rawValue: 5)
    /// The provider, the system or a file operation failed for a reason that is none of the
    /// above. Kept apart from ``notFound`` so that a script can tell "no such item" from "could
    /// not look".
    public static let failed = ExitStatus(rawValue: 6)
}
