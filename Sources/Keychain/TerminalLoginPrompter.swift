import Glibc
import KeychainCore

/// Asks on the controlling terminal (`/dev/tty`), whatever standard input and output are:
///
/// ```
/// Log in to com.example.mail
/// Account [alice]:            (Enter keeps the pre-filled account)
/// Password for alice:         (typed without echo)
/// Remember the password? [y/N]
/// ```
///
/// End of input (Ctrl-D) at any question cancels. Without a terminal it throws
/// ``KeychainError/noPrompter(reason:)`` at once. The password is read byte by byte into a
/// buffer that is wiped after use; echo is restored before the call returns.
public struct TerminalLoginPrompter: LoginPrompter {
    /// The terminal device to talk to.
    public var path: String

    /// A prompter on `path` (by default the controlling terminal, `/dev/tty`).
    public init(terminal path: String = "/dev/tty") {
        self.path = path
    }

    /// Asks for the account (pre-filled), the password without echo and, when asked to,
    /// whether to remember it.
    ///
    /// - Throws: ``KeychainError/noPrompter(reason:)`` when `path` cannot be opened as a terminal.
    public func ask(_ request: LoginPromptRequest) async throws(KeychainError) -> LoginAnswer? {
        let path = self.path
        return try await BlockingCall.run { () throws(KeychainError) in
            try TerminalSession(path: path).ask(request)
        }
    }
}

/// One open terminal for one prompt; closed when released.
private final class TerminalSession {
    let fd: Int32

    /// The longest line accepted (a longer one is cut there).
    static let lineLimit = 64 * 1024

    init(path: String) throws(KeychainError) {
        let fd = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else {
            throw .noPrompter(reason: "no terminal (\(path): \(String(cString: strerror(errno))))")
        }
        guard isatty(fd) != 0 else {
            close(fd)
            throw .noPrompter(reason: "\(path) is not a terminal")
        }
        self.fd = fd
    }

    deinit { close(fd) }

    func ask(_ request: LoginPromptRequest) throws(KeychainError) -> LoginAnswer? {
        if request.attempt == 1 && request.reason == .noRememberedCredential {
            write("Log in to \(request.service)\n")
        }
        if let message = request.message { write(message + "\n") }

        var account = ""
        while account.isEmpty {
            guard var line = readLine(prompt: request.account.map { "Account [\($0)]: " } ?? "Account: ", echo: true)
            else { return nil }
            defer { Self.wipe(&line) }
            account = String(decoding: line, as: UTF8.self).trimmingCharacters()
            if account.isEmpty, let prefilled = request.account { account = prefilled }
        }

        guard var password = readLine(prompt: "Password for \(account): ", echo: false) else { return nil }
        defer { Self.wipe(&password) }
        let credential = password.withUnsafeBytes { LoginCredential(account: account, passwordBytes: $0) }

        var remember = false
        if request.asksToRemember {
            guard let answer = readLine(prompt: "Remember the password? [y/N] ", echo: true) else { return nil }
            let word = String(decoding: answer, as: UTF8.self).trimmingCharacters().lowercased()
            remember = word == "y" || word == "yes"
        }
        return LoginAnswer(credential: credential, remember: remember)
    }

    /// Writes `prompt` and reads one line, without its newline; `nil` at end of input. With
    /// `echo` off, echo is switched off before the prompt appears and back on after the read
    /// (see ``HiddenLine``), and a newline is written then, since the one typed was not echoed.
    private func readLine(prompt: String, echo: Bool) -> [UInt8]? {
        let line = HiddenLine(
            from: fd, limit: Self.lineLimit, hidden: !echo, prompt: { write(prompt) }, newline: { write("\n") })
        if line.reachedEnd { return nil }
        return line.withBytes { Array($0) }
    }

    private func write(_ text: String) {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 && errno == EINTR { continue }
            if written <= 0 { return }
            offset += written
        }
    }

    private static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { SecretBuffer.wipe($0) }
        bytes.removeAll()
    }
}

extension String {
    /// The string without leading and trailing spaces and tabs.
    fileprivate func trimmingCharacters() -> String {
        let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        return String(drop(while: blank).reversed().drop(while: blank).reversed())
    }
}
