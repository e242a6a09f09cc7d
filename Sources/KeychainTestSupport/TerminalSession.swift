public import Foundation

/// A program run on a new pseudo-terminal, as a person at a terminal runs it: each answer is
/// typed once the screen ends with the prompt that precedes it.
public enum TerminalSession {
    /// The pty driver (Python's `pty`, in Debian's /usr/bin/python3): answers as JSON, then the
    /// program and its arguments; prints the exit status and the screen as JSON.
    private static let driver = #"""
        import json, os, pty, select, sys, time
        answers = json.loads(sys.argv[1])
        pid, fd = pty.fork()
        if pid == 0:
            os.execv(sys.argv[2], sys.argv[2:])
        screen, deadline = b"", time.time() + 30
        while time.time() < deadline:
            if answers and screen.endswith(answers[0][0].encode()):
                os.write(fd, answers.pop(0)[1].encode() + b"\n")
            ready, _, _ = select.select([fd], [], [], 0.2)
            if not ready:
                continue
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            screen += chunk
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"status": os.waitstatus_to_exitcode(status), "screen": screen.decode(errors="replace")}))
        """#

    /// The driver printed no report.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Runs `arguments` (argv[0] a path) with `environment`, typing the answers in order;
    /// returns its exit status and everything the terminal showed (`\r\n` as the terminal has it).
    public static func run(
        _ arguments: [String], answers: [(prompt: String, answer: String)], environment: [String: String], scratch: URL
    ) throws -> (status: Int, screen: String) {
        let answerText = String(decoding: try JSONSerialization.data(withJSONObject: answers.map { [$0.prompt, $0.answer] }), as: UTF8.self)
        let result = try CommandResult.run(["/usr/bin/python3", "-c", driver, answerText] + arguments, environment: environment, scratch: scratch)
        guard let report = try? JSONSerialization.jsonObject(with: result.output) as? [String: Any] else {
            throw Failure(description: "the pty driver failed: \(result.errorOutput)")
        }
        return (report["status"] as? Int ?? -1, report["screen"] as? String ?? "")
    }
}
