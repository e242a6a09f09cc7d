import Foundation
import KeychainTestSupport
import Testing

@testable import Keychain

/// A pseudo-terminal standing in for the person's terminal: the prompter opens its slave side
/// by path; the test reads what it shows and types answers on the master side.
final class PseudoTerminal: @unchecked Sendable {
    // Driven from one thread at a time (see `drive`).

    let master: Int32
    let slavePath: String
    /// Everything the prompter wrote (and the terminal echoed) so far.
    private(set) var output = ""

    init() throws {
        // glibc declares the pty calls only for _XOPEN_SOURCE, which Swift's Glibc module lacks.
        typealias IntCall = @convention(c) (Int32) -> Int32
        typealias NameCall = @convention(c) (Int32, UnsafeMutablePointer<CChar>?, Int) -> Int32
        func libc<T>(_ name: String, as type: T.Type) throws -> T {
            guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { throw HarnessError("no \(name)") }
            return unsafeBitCast(symbol, to: type)
        }
        master = try libc("posix_openpt", as: IntCall.self)(O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard master >= 0, try libc("grantpt", as: IntCall.self)(master) == 0,
            try libc("unlockpt", as: IntCall.self)(master) == 0
        else { throw HarnessError("no pseudo-terminal") }
        var name = [CChar](repeating: 0, count: 128)
        guard try libc("ptsname_r", as: NameCall.self)(master, &name, name.count) == 0 else {
            throw HarnessError("ptsname_r failed")
        }
        slavePath = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    deinit { hangUp() }

    private var isOpen = true

    /// Closes the master side: the prompter reading the slave side sees end of input.
    func hangUp() {
        if isOpen { close(master) }
        isOpen = false
    }

    /// Waits (up to 10 s) until the output shows `text`.
    func expect(_ text: String) throws {
        let deadline = Date().addingTimeInterval(10)
        while !output.contains(text) {
            guard Date() < deadline else {
                hangUp()  // the prompter's read ends, so the test fails instead of hanging
                throw HarnessError("the terminal never showed \(text.debugDescription); it showed \(output.debugDescription)")
            }
            var poller = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 100) > 0 else { continue }
            var buffer = [UInt8](repeating: 0, count: 1024)
            let count = read(master, &buffer, buffer.count)
            if count > 0 { output += String(decoding: buffer[0..<count], as: UTF8.self) }
        }
    }

    /// Types `line` and Enter.
    func type(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { write(master, $0.baseAddress, $0.count) }
    }

    /// Types Ctrl-D (end of input) on an empty line.
    func endOfInput() {
        var eot: UInt8 = 4
        _ = write(master, &eot, 1)
    }
}

/// Runs `script` (typing at a ``PseudoTerminal``) on a thread of its own, so its blocking reads
/// never hold a thread of the cooperative pool that the prompter under test needs.
func drive(_ script: @escaping @Sendable () throws -> Void) async throws {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
        Thread {
            do {
                try script()
                continuation.resume()
            } catch {
                continuation.resume(throwing: error)
            }
        }.start()
    }
}

/// The prompters the library ships, driven through a pseudo-terminal and a scripted pinentry.
@Suite struct LoginPrompters {
    func request(account: String?, reason: LoginPromptRequest.Reason = .noRememberedCredential, remember: Bool = true)
        -> LoginPromptRequest
    {
        LoginPromptRequest(
            service: "mail.example.com", account: account, reason: reason, attempt: 1, maximumAttempts: 3,
            asksToRemember: remember)
    }

    @Test("the terminal prompter keeps a pre-filled account on Enter, reads the password without echo, asks to remember")
    func terminal() async throws {
        let terminal = try PseudoTerminal()
        let prompter = TerminalLoginPrompter(terminal: terminal.slavePath)
        async let person: Void = drive {
            try terminal.expect("Account [alice]: ")
            terminal.type("")
            try terminal.expect("Password for alice: ")
            terminal.type("typed-s3cret")
            try terminal.expect("Remember the password? [y/N] ")
            terminal.type("y")
        }
        let asked = try await prompter.ask(request(account: "alice", reason: .rememberedRejected))
        try await person
        let answer = try #require(asked)
        #expect(answer.credential.account == "alice")
        #expect(answer.credential.password == "typed-s3cret")
        #expect(answer.remember)
        #expect(terminal.output.contains("The remembered password was not accepted.\r\n"))
        #expect(!terminal.output.contains("typed-s3cret"))  // never echoed
    }

    @Test("the terminal prompter takes another account, defaults to not remembering, and Ctrl-D cancels")
    func terminalOtherAccountAndCancel() async throws {
        let terminal = try PseudoTerminal()
        let prompter = TerminalLoginPrompter(terminal: terminal.slavePath)
        async let person: Void = drive {
            try terminal.expect("Log in to mail.example.com\r\nAccount: ")
            terminal.type("bob")
            try terminal.expect("Password for bob: ")
            terminal.type("pw")
            try terminal.expect("[y/N] ")
            terminal.type("")
        }
        let asked = try await prompter.ask(request(account: nil))
        try await person
        let answer = try #require(asked)
        #expect(answer.credential.account == "bob")
        #expect(!answer.remember)

        let second = try PseudoTerminal()
        async let leaves: Void = drive {
            try second.expect("Account [alice]: ")
            second.endOfInput()
        }
        let cancelled = try await TerminalLoginPrompter(terminal: second.slavePath).ask(request(account: "alice"))
        try await leaves
        #expect(cancelled == nil)
    }

    @Test("without a terminal the terminal prompter throws .noPrompter at once")
    func noTerminal() async throws {
        let error = try await keychainError(within: 5) {
            _ = try await TerminalLoginPrompter(terminal: "/nonexistent/tty").ask(request(account: "alice"))
        }
        guard case .noPrompter(let reason)? = error else { Issue.record("got \(String(describing: error))"); return }
        #expect(reason.contains("no terminal"))
        let notATerminal = try await keychainError(within: 5) {
            _ = try await TerminalLoginPrompter(terminal: "/dev/null").ask(request(account: "alice"))
        }
        #expect(notATerminal == .noPrompter(reason: "/dev/null is not a terminal"))
    }

    /// A pinentry stand-in: answers GETPIN and CONFIRM with the next line of $PINENTRY_ANSWERS
    /// (CANCEL as the Cancel button, NOTOK as the middle button) and logs every command.
    static let scriptedPinentry = #"""
        #!/bin/sh
        echo "OK Pleased to meet you"
        next() { answer=$(head -n 1 "$PINENTRY_ANSWERS"); sed -i 1d "$PINENTRY_ANSWERS"; }
        while IFS= read -r line; do
            echo "$line" >>"$PINENTRY_ANSWERS.log"
            case "$line" in
            GETPIN) next
                if [ "$answer" = CANCEL ]; then echo "ERR 83886179 Operation cancelled"; else printf 'D %s\nOK\n' "$answer"; fi ;;
            CONFIRM) next
                case "$answer" in
                OK) echo OK ;;
                NOTOK) echo "ERR 83886194 Not confirmed" ;;
                *) echo "ERR 83886179 Operation cancelled" ;;
                esac ;;
            BYE) echo OK; exit 0 ;;
            *) echo OK ;;
            esac
        done
        """#

    /// Writes the stand-in and its answers to a fresh directory; returns the program and the
    /// answer file (its log is the same path plus `.log`).
    static func writePinentry(answers: [String]) throws -> (program: String, answers: URL) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pinentry-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let program = directory.appendingPathComponent("pinentry")
        try ExecutableFile.write(script: scriptedPinentry, to: program)
        let answerFile = directory.appendingPathComponent("answers")
        try (answers.joined(separator: "\n") + "\n").write(to: answerFile, atomically: true, encoding: .utf8)
        return (program.path, answerFile)
    }

    @Test("the pinentry prompter asks for the account's password, shows why, and asks to remember")
    func pinentry() async throws {
        let (program, answers) = try Self.writePinentry(answers: ["pin-s3cret", "OK", "second", "NOTOK", "CANCEL"])
        setenv("PINENTRY_ANSWERS", answers.path, 1)
        let prompter = PinentryLoginPrompter(program: program)
        let answer = try #require(try await prompter.ask(request(account: "alice", reason: .rememberedRejected)))
        #expect(answer.credential.account == "alice")
        #expect(answer.credential.password == "pin-s3cret")
        #expect(answer.remember)
        let log = try String(contentsOfFile: answers.path + ".log", encoding: .utf8)
        #expect(log.contains("SETDESC Enter the password for alice on mail.example.com."))
        #expect(log.contains("SETERROR The remembered password was not accepted."))
        #expect(log.contains("CONFIRM"))
        #expect(!log.contains("pin-s3cret"))

        let notRemembered = try #require(try await prompter.ask(request(account: "alice")))
        #expect(notRemembered.credential.password == "second")
        #expect(!notRemembered.remember)
        #expect(try await prompter.ask(request(account: "alice")) == nil)  // Cancel
    }

    @Test("the pinentry prompter throws .noPrompter at once: no program, one that cannot start, no account")
    func pinentryUnavailable() async throws {
        let missing = try await keychainError(within: 5) {
            _ = try await PinentryLoginPrompter(program: "no-such-pinentry-program").ask(request(account: "alice"))
        }
        #expect(missing == .noPrompter(reason: "no pinentry ('no-such-pinentry-program' is not on PATH; set PINENTRY)"))
        let broken = try await keychainError(within: 5) {
            _ = try await PinentryLoginPrompter(program: "/nonexistent/pinentry").ask(request(account: "alice"))
        }
        guard case .noPrompter? = broken else { Issue.record("got \(String(describing: broken))"); return }
        let (program, _) = try Self.writePinentry(answers: [])
        let noAccount = try await keychainError(within: 5) {
            _ = try await PinentryLoginPrompter(program: program).ask(request(account: nil))
        }
        #expect(noAccount == .noPrompter(reason: "pinentry cannot ask for an account name; give one"))
    }
}
