/// Why `secretctl` stops, with its exit status (see `EXIT STATUS` in secretctl(1)).
public enum CommandLineError: Error, Equatable, Sendable {
    /// The command line is wrong; exit 2, with a pointer to the verb's help.
    case usage(String, command: String?)
    /// The operation failed; one line on stderr and the given status.
    case failure(String, status: ExitStatus)

    /// The exit status.
    public var status: ExitStatus {
        switch self {
        case .usage: return .usage
        case .failure(_, let status): return status
        }
    }

    /// The line(s) printed on standard error.
    public var message: String {
        switch self {
        case .usage(let message, let command):
            return "secretctl: \(message)\nSee 'secretctl \(command.map { "\($0) " } ?? "")--help'."
        case .failure(let message, _):
            return "secretctl: \(message)"
        }
    }
}

/// `secretctl`'s exit statuses, as DESIGN.md fixes them; `login` passes on its command's
/// status, which may be any other number too.
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
}
