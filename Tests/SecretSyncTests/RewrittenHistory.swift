import Foundation
import KeychainTestSupport
import Testing

/// What a remote's host (or a user with `git push --force`) can do to the vault's history:
/// replace it with a single new commit holding the same files, one of them optionally altered.
enum RewrittenHistory {
    /// Force-pushes to `remote` a commit with no parent and the branch's files (a byte appended
    /// to `appendingTo`, a path in the repository, when given); git runs in `scratch`.
    static func push(to remote: String, scratch: URL, appendingTo path: String? = nil) throws {
        let host = scratch.appendingPathComponent("rewriting-host").path
        var commands = [
            ["git", "clone", "--quiet", "--branch", "main", remote, host],
            ["git", "-C", host, "checkout", "--quiet", "--orphan", "rewritten"],
        ]
        if let path { commands.append(["sh", "-c", "printf x >> \"$1\"", "sh", "\(host)/\(path)"]) }
        commands += [
            ["git", "-C", host, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "--quiet", "-am", "rewritten"],
            ["git", "-C", host, "push", "--quiet", "--force", "origin", "HEAD:main"],
        ]
        for command in commands {
            let result = try CommandResult.run(command, environment: ["PATH": "/usr/bin:/bin"], scratch: scratch, timeout: 30)
            #expect(result.status == 0, "\(command): \(result.errorOutput)")
        }
    }
}
