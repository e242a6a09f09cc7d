import Foundation
import KeychainTestSupport
import Testing

@testable import Keychain

extension ProviderTests.SecretCtlEndToEnd {
    /// A service that knows one account and password (in files the test can change) and logs
    /// every credential it is given; COMMAND for `secretctl login`.
    struct LoginServer {
        let directory: URL
        /// `sh -c` script: reads the password from standard input, the account from the
        /// environment; exits 0 when they match, $REJECT_STATUS (1) when not, $DOWN_STATUS
        /// instead of checking when that is set.
        static let script = #"""
            IFS= read -r password
            printf '%s:%s:%s\n' "$SECRETCTL_SERVICE" "$SECRETCTL_ACCOUNT" "$password" >>"$SERVER/tries"
            [ -n "$DOWN_STATUS" ] && exit "$DOWN_STATUS"
            [ "$SECRETCTL_ACCOUNT" = "$(cat "$SERVER/account")" ] && [ "$password" = "$(cat "$SERVER/password")" ] && exit 0
            exit "${REJECT_STATUS:-1}"
            """#

        init(account: String, password: String) throws {
            directory = try environment().root.appendingPathComponent("login-server-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try account.write(to: directory.appendingPathComponent("account"), atomically: true, encoding: .utf8)
            try password.write(to: directory.appendingPathComponent("password"), atomically: true, encoding: .utf8)
        }

        /// The command line; its `--help` belongs to COMMAND (words after `--` are not secretctl's).
        var command: [String] { ["/bin/sh", "-c", Self.script, "login-server", "--help"] }

        /// "service:account:password" of every credential tried, in order.
        var tries: [String] {
            ((try? String(contentsOf: directory.appendingPathComponent("tries"), encoding: .utf8)) ?? "")
                .split(separator: "\n").map(String.init)
        }
    }

    /// `secretctl login` without a controlling terminal (as under cron or CI), with pinentry
    /// answering from `answers` when given, and none at all otherwise.
    func login(
        _ options: [String], service: String, server: LoginServer, pinentry answers: [String]? = nil,
        environment extra: [String: String] = [:]
    ) throws -> (result: CommandResult, pinentryLog: String) {
        var variables = ["SERVER": server.directory.path]
        var log: URL?
        if let answers {
            let (program, answerFile) = try LoginPrompters.writePinentry(answers: answers)
            variables["PINENTRY"] = program
            variables["PINENTRY_ANSWERS"] = answerFile.path
            log = answerFile.appendingPathExtension("log")
        } else {
            variables["PINENTRY"] = "/nonexistent/pinentry"
        }
        variables.merge(extra) { $1 }
        // setsid: a new session without a controlling terminal, so /dev/tty cannot be opened.
        let result = try environment().run(
            ["/usr/bin/setsid", "-w", Self.secretctl, "login"] + options + [service, "--"] + server.command,
            environment: variables)
        return (result, log.flatMap { try? String(contentsOf: $0, encoding: .utf8) } ?? "")
    }

    @Test("login runs COMMAND with the remembered password on stdin and the account in its environment; nothing is asked")
    func loginRemembered() throws {
        let service = uniqueService()
        let server = try LoginServer(account: "alice", password: "right")
        #expect(try run(["set", service, "alice"], input: "right").status == 0)
        let (result, _) = try login([], service: service, server: server)
        #expect(result.status == 0, "\(result.errorOutput)")
        #expect(server.tries == ["\(service):alice:right"])
        #expect(try run(["get", service, "alice"]).text == "right")
    }

    @Test("login: a rejected remembered password is erased, the user is asked, and --remember keeps the new one")
    func loginRejectedThenAsked() throws {
        let service = uniqueService()
        let server = try LoginServer(account: "alice", password: "new")
        #expect(try run(["set", service, "alice"], input: "old").status == 0)
        let (result, log) = try login(["--remember"], service: service, server: server, pinentry: ["new"])
        #expect(result.status == 0, "\(result.errorOutput)")
        #expect(server.tries == ["\(service):alice:old", "\(service):alice:new"])
        #expect(log.contains("SETERROR The remembered password was not accepted."))
        #expect(!log.contains("CONFIRM"))  // --remember: not asked
        #expect(try run(["get", service, "alice"]).text == "new")

        // Asked to remember, the user says no: the password works but is not kept.
        let other = uniqueService()
        let (declined, declinedLog) = try login(["--account", "alice"], service: other, server: server, pinentry: ["new", "NOTOK"])
        #expect(declined.status == 0, "\(declined.errorOutput)")
        #expect(declinedLog.contains("CONFIRM"))
        #expect(try run(["get", other, "alice"]).status == 1)
    }

    @Test("login gives up after three rejected prompts with COMMAND's status, and remembers nothing")
    func loginAttemptsBounded() throws {
        let service = uniqueService()
        let server = try LoginServer(account: "alice", password: "right")
        let (result, log) = try login(
            ["--account", "alice", "--remember"], service: service, server: server, pinentry: ["a", "b", "c", "right"])
        #expect(result.status == 1)
        #expect(result.errorOutput.contains("rejected every time"))
        #expect(server.tries.count == 3)
        #expect(log.components(separatedBy: "GETPIN").count == 4)
        #expect(log.contains("SETERROR The password was not accepted (attempt 3 of 3)."))
        #expect(try run(["get", service, "alice"]).status == 1)
    }

    @Test("login: --reject-exit names the rejection statuses; any other status keeps the password and is passed on")
    func loginRejectExitAndOtherFailure() throws {
        let service = uniqueService()
        let server = try LoginServer(account: "alice", password: "new")
        #expect(try run(["set", service, "alice"], input: "old").status == 0)
        // Status 77 means "wrong password" only when listed; unlisted, it is another failure.
        let (unlisted, unlistedLog) = try login(
            [], service: service, server: server, pinentry: ["new"], environment: ["REJECT_STATUS": "77"])
        #expect(unlisted.status == 77)
        #expect(unlistedLog.isEmpty)  // nobody was asked
        #expect(try run(["get", service, "alice"]).text == "old")
        let (listed, _) = try login(
            ["--reject-exit", "1,77", "--remember"], service: service, server: server, pinentry: ["new"],
            environment: ["REJECT_STATUS": "77"])
        #expect(listed.status == 0, "\(listed.errorOutput)")
        #expect(try run(["get", service, "alice"]).text == "new")
        // The service is down: secretctl exits with COMMAND's status and the keyring is untouched.
        let (down, downLog) = try login([], service: service, server: server, pinentry: ["x"], environment: ["DOWN_STATUS": "9"])
        #expect(down.status == 9)
        #expect(down.errorOutput.isEmpty)
        #expect(downLog.isEmpty)
        #expect(try run(["get", service, "alice"]).text == "new")
    }

    @Test("login with no terminal and no pinentry fails at once with status 3, without running COMMAND")
    func loginNoWayToAsk() throws {
        let service = uniqueService()
        let server = try LoginServer(account: "alice", password: "right")
        let started = Date()
        let (result, _) = try login(["--account", "alice"], service: service, server: server)
        #expect(result.status == 3)
        #expect(result.errorOutput.hasPrefix("secretctl: cannot ask for the password: no terminal"))
        #expect(server.tries.isEmpty)
        // The default search: $PINENTRY unset and no pinentry on PATH.
        let (bare, _) = try login(
            ["--account", "alice"], service: service, server: server, environment: ["PINENTRY": "", "PATH": "/nonexistent"])
        #expect(bare.status == 3)
        #expect(bare.errorOutput.contains("'pinentry' is not on PATH"))
        #expect(Date().timeIntervalSince(started) < 30)  // a hang would have been killed after 60 s
    }
}
