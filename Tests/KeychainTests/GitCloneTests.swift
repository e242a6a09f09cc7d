import Foundation
import KeychainTestSupport
import Testing

@testable import Keychain

extension ProviderTests.SecretCtlEndToEnd {
    /// A git server on 127.0.0.1: git's own `http-backend` behind a small Python HTTP server
    /// that asks for basic authentication against `user:password` in a file the test changes.
    final class GitHTTPServer {
        static let script = #"""
            import base64, os, subprocess, sys
            from http.server import BaseHTTPRequestHandler, HTTPServer

            root, credentials = sys.argv[1], sys.argv[2]

            class Handler(BaseHTTPRequestHandler):
                def do_GET(self): self.serve()
                def do_POST(self): self.serve()

                def serve(self):
                    given = ""
                    header = self.headers.get("Authorization", "")
                    if header.startswith("Basic "):
                        given = base64.b64decode(header[6:]).decode()
                    with open(credentials) as file:
                        expected = file.read().strip()
                    with open(os.path.join(root, "requests.log"), "a") as log:
                        log.write(("200 " if given == expected else "401 ") + self.command + " " + self.path + "\n")
                    if given != expected:
                        self.send_response(401)
                        self.send_header("WWW-Authenticate", 'Basic realm="git"')
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    path, _, query = self.path.partition("?")
                    body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                    env = {
                        "PATH": os.environ["PATH"], "GIT_PROJECT_ROOT": root, "GIT_HTTP_EXPORT_ALL": "1",
                        "PATH_INFO": path, "QUERY_STRING": query, "REQUEST_METHOD": self.command,
                        "CONTENT_TYPE": self.headers.get("Content-Type", ""), "CONTENT_LENGTH": str(len(body)),
                        "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
                        "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
                        "REMOTE_USER": given.partition(":")[0], "REMOTE_ADDR": "127.0.0.1",
                    }
                    output = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True).stdout
                    separator = b"\r\n\r\n" if b"\r\n\r\n" in output else b"\n\n"
                    head, _, payload = output.partition(separator)
                    status, headers = 200, []
                    for line in head.decode().splitlines():
                        name, _, value = line.partition(":")
                        if name.lower() == "status":
                            status = int(value.split()[0])
                        elif name:
                            headers.append((name, value.strip()))
                    self.send_response(status)
                    for name, value in headers:
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)

                def log_message(self, *arguments):
                    pass

            server = HTTPServer(("127.0.0.1", 0), Handler)
            print(server.server_port, flush=True)
            server.serve_forever()
            """#

        let directory: URL
        let process: SupervisedProcess
        let port: Int

        /// Starts the server with one repository, `repo.git`, holding one commit.
        init(user: String, password: String) throws {
            let env = try environment()
            directory = env.root.appendingPathComponent("git-server-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let work = directory.appendingPathComponent("work").path
            for command in [
                ["git", "init", "-q", "-b", "main", work],
                ["git", "-C", work, "-c", "user.name=Test", "-c", "user.email=test@example.com", "commit", "-q",
                 "--allow-empty", "-m", "first"],
                ["git", "clone", "-q", "--bare", work, directory.appendingPathComponent("repo.git").path],
            ] {
                let result = try env.run(command, environment: ["GIT_CONFIG_NOSYSTEM": "1"])
                guard result.status == 0 else { throw HarnessError("\(command): \(result.errorOutput)") }
            }
            let script = directory.appendingPathComponent("server.py")
            try Self.script.write(to: script, atomically: true, encoding: .utf8)
            try "\(user):\(password)".write(
                to: directory.appendingPathComponent("credentials"), atomically: true, encoding: .utf8)
            process = try SupervisedProcess(
                ["python3", script.path, directory.path, directory.appendingPathComponent("credentials").path],
                environment: env.clientEnvironment, logURL: directory.appendingPathComponent("server.log"))
            let deadline = Date().addingTimeInterval(20)
            var port: Int?
            while port == nil {
                port = process.log.split(separator: "\n").first.flatMap { Int($0) }
                guard port == nil else { break }
                guard Date() < deadline, process.isRunning else {
                    process.stop()
                    throw HarnessError("the git server did not start: \(process.log)")
                }
                usleep(20_000)
            }
            self.port = port!
        }

        deinit { process.stop() }

        /// Changes the credentials the server accepts.
        func setPassword(user: String, password: String) throws {
            try "\(user):\(password)".write(
                to: directory.appendingPathComponent("credentials"), atomically: true, encoding: .utf8)
        }

        var url: String { "http://127.0.0.1:\(port)/repo.git" }

        /// The requests answered with 401.
        var refusals: Int {
            ((try? String(contentsOf: directory.appendingPathComponent("requests.log"), encoding: .utf8)) ?? "")
                .split(separator: "\n").filter { $0.hasPrefix("401 ") }.count
        }
    }

    /// A scripted person for git: GIT_ASKPASS answers "alice" and the password in `passwordFile`,
    /// and logs each question.
    struct AskPass {
        let program: URL
        let passwordFile: URL
        let log: URL

        init(directory: URL) throws {
            program = directory.appendingPathComponent("askpass")
            passwordFile = directory.appendingPathComponent("askpass-password")
            log = directory.appendingPathComponent("askpass.log")
            let script = """
                #!/bin/sh
                echo "$1" >>"\(log.path)"
                case "$1" in
                Username*) echo alice ;;
                *) cat "\(passwordFile.path)" ;;
                esac
                """
            try ExecutableFile.write(script: script, to: program)
        }

        func answer(_ password: String) throws {
            try password.write(to: passwordFile, atomically: true, encoding: .utf8)
        }

        /// The questions asked so far.
        var questions: [String] {
            ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }
    }

    @Test("git clone over HTTP with basic auth: asked once, then remembered; a changed password is rejected, erased and asked again")
    func gitCloneRemembers() throws {
        let server = try GitHTTPServer(user: "alice", password: "first-pw")
        let askpass = try AskPass(directory: server.directory)
        try askpass.answer("first-pw")
        var clones = 0
        func clone() throws -> CommandResult {
            clones += 1
            let destination = server.directory.appendingPathComponent("clone-\(clones)").path
            return try environment().run(
                ["git", "-c", "credential.helper=", "-c", "credential.helper=!\(Self.secretctl) git-credential",
                 "clone", "-q", server.url, destination],
                environment: ["GIT_ASKPASS": askpass.program.path, "GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1"])
        }
        let remembered = { () throws -> String? in
            try InternetKeychain(server: "127.0.0.1", protocol: .http, port: server.port).password(for: "alice")
        }

        // First clone: nothing remembered, so git asks; the password that worked is stored.
        let first = try clone()
        #expect(first.status == 0, "\(first.errorOutput)")
        #expect(askpass.questions.count == 2)
        #expect(askpass.questions.first?.hasPrefix("Username for 'http://127.0.0.1:\(server.port)'") == true)
        #expect(try remembered() == "first-pw")

        // Second clone: filled in from the keyring, nobody is asked.
        let second = try clone()
        #expect(second.status == 0, "\(second.errorOutput)")
        #expect(askpass.questions.count == 2)

        // The server's password changes: the remembered one fails, git rejects it and the
        // helper erases it (git gives up on this clone without asking).
        try server.setPassword(user: "alice", password: "second-pw")
        try askpass.answer("second-pw")
        let refusalsBefore = server.refusals
        let third = try clone()
        #expect(third.status == 128)  // git's status for a fatal error
        #expect(third.errorOutput.contains("Authentication failed"))
        #expect(server.refusals == refusalsBefore + 2)  // once without, once with the old password
        #expect(try remembered() == nil)

        // Next clone: the user is asked again, and the new password is remembered.
        let fourth = try clone()
        #expect(fourth.status == 0, "\(fourth.errorOutput)")
        #expect(askpass.questions.count == 4)
        #expect(try remembered() == "second-pw")
        let fifth = try clone()
        #expect(fifth.status == 0, "\(fifth.errorOutput)")
        #expect(askpass.questions.count == 4)
    }
}
