public import Foundation

/// A stand-in for the person at pinentry: a shell script speaking the Assuan protocol that
/// answers each question with the next line of its answers file, and logs every command.
///
/// For GETPIN a line is the password typed, or `CANCEL`. For CONFIRM (a three-button choice)
/// a line is `OK`, `NOTOK` (the middle button) or `CANCEL`. For either, `WAIT` is a person who
/// never answers: the dialog stays until the process is killed.
public struct ScriptedPinentry: Sendable {
    /// The script to configure as `pinentry = …`.
    public let program: URL
    /// The answers, one per line, consumed in order.
    public let answers: URL

    /// Everything secretd sent to pinentry so far.
    public var log: String { (try? String(contentsOfFile: answers.path + ".log", encoding: .utf8)) ?? "" }

    /// The process ids of every pinentry started so far, in order.
    public var pids: [Int32] {
        ((try? String(contentsOfFile: answers.path + ".pids", encoding: .utf8)) ?? "").split(separator: "\n")
            .compactMap { Int32($0) }
    }

    /// How many times a command (`GETPIN`, `CONFIRM`) was sent.
    public func count(_ command: String) -> Int {
        log.split(separator: "\n").filter { $0 == command }.count
    }

    /// Writes the script and the answers into `directory`.
    public init(in directory: URL, answers: [String]) throws {
        program = directory.appendingPathComponent("pinentry")
        self.answers = directory.appendingPathComponent("pinentry-answers")
        try ExecutableFile.write(script: Self.script, to: program)
        try setAnswers(answers)
    }

    /// Replaces the answers still to be given.
    public func setAnswers(_ lines: [String]) throws {
        try (lines.map { $0 + "\n" }.joined()).write(to: answers, atomically: true, encoding: .utf8)
    }

    /// The environment variable the script reads the answers file from.
    public var environment: [String: String] { ["PINENTRY_ANSWERS": answers.path] }

    private static let script = #"""
        #!/bin/sh
        echo $$ >>"$PINENTRY_ANSWERS.pids"
        echo "OK Pleased to meet you"
        while IFS= read -r line; do
            echo "$line" >>"$PINENTRY_ANSWERS.log"
            case "$line" in
            GETPIN|CONFIRM)
                answer=$(head -n 1 "$PINENTRY_ANSWERS")
                sed -i 1d "$PINENTRY_ANSWERS"
                case "$line:$answer" in
                *:CANCEL) echo "ERR 83886179 Operation cancelled" ;;
                *:WAIT) while :; do sleep 0.1; done ;;
                CONFIRM:NOTOK) echo "ERR 83886194 Not confirmed" ;;
                CONFIRM:*) echo OK ;;
                *) printf 'D %s\nOK\n' "$answer" ;;
                esac ;;
            BYE) echo OK; exit 0 ;;
            *) echo OK ;;
            esac
        done
        """#
}
