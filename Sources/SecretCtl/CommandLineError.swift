public import KeychainCore

/// Why `secretctl` stops, with its exit status (see `EXIT STATUS` in secretctl(1)).
public enum CommandLineError: Error, Equatable, Sendable {
    /// The command line is wrong; exit 2, with a pointer to the verb's help.
    case usage(String, command: String?)
    /// The operation failed; one line on stderr and the given status.
    case failure(String, status: ExitStatus)
    /// Exit with this status and print nothing: `lookup` and `clear` when nothing matched (as
    /// secret-tool), `login` when its command failed and has said why itself.
    case silent(status: ExitStatus)

    /// The exit status.
    public var status: ExitStatus {
        switch self {
        case .usage: return .usage
        case .failure(_, let status), .silent(let status): return status
        }
    }

    /// What went wrong, without the leading `secretctl: `, to say inside another message;
    /// empty for a silent exit.
    public var detail: String {
        switch self {
        case .usage(let message, _), .failure(let message, _): return message
        case .silent: return ""
        }
    }

    /// The line(s) printed on standard error; nil for a silent exit.
    public var message: String? {
        switch self {
        case .usage(let message, let command):
            return "secretctl: \(message)\nSee 'secretctl \(command.map { "\($0) " } ?? "")--help'."
        case .failure(let message, _):
            return "secretctl: \(message)"
        case .silent:
            return nil
        }
    }
}
