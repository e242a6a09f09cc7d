import FoundationEssentials
import KeychainCore
import Glibc

/// Changes to `access-groups.conf` made by secretd itself (`secretctl groups add-member`, an
/// "always allow" answer). Edits keep every other line, comment and blank as the person wrote
/// them, and the file is replaced atomically (0600).
package enum AccessPolicyFile {
    /// The text with `member = identity` added to group `group` (the section is created at the
    /// end when missing); unchanged when it is already a member.
    package static func adding(_ identity: String, to group: String, in text: String) -> String {
        var lines = text.isEmpty ? [] : text.lines
        if lines.last == "" { lines.removeLast() }
        guard let range = section(group, in: lines) else {
            if let last = lines.last, !last.isEmpty { lines.append("") }
            lines += ["[group \"\(group)\"]", "member = \(identity)"]
            return lines.joined(separator: "\n") + "\n"
        }
        if lines[range].contains(where: { isMember($0, identity) }) { return text }
        // After the section's last non-blank line, so trailing blank lines keep separating it.
        var insertAt = range.upperBound
        while insertAt > range.lowerBound + 1, lines[insertAt - 1].trimmingWhitespace.isEmpty {
            insertAt -= 1
        }
        lines.insert("member = \(identity)", at: insertAt)
        return lines.joined(separator: "\n") + "\n"
    }

    /// The text without `member = identity` lines in group `group`.
    package static func removing(_ identity: String, from group: String, in text: String) -> String {
        var lines = text.lines
        guard let range = section(group, in: lines) else { return text }
        let kept = lines[range].filter { !isMember($0, identity) }
        lines.replaceSubrange(range, with: kept)
        return lines.joined(separator: "\n")
    }

    /// Replaces the file at `url` with `text` (PrivateFile: 0600, flushed, renamed over the old one).
    static func write(_ text: String, to url: URL) throws(ConfigurationError) {
        try? FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true,
                                                 attributes: [.posixPermissions: 0o700])
        if let reason = PrivateFile.replace(url, with: Array(text.utf8)) {
            throw ConfigurationError(file: url.path, line: 0, message: "cannot be written: \(reason)")
        }
    }

    /// The lines of group `group`'s section, header included.
    private static func section(_ group: String, in lines: [String]) -> Range<Int>? {
        let noError: (String) -> ConfigurationError = { ConfigurationError(file: "", line: 0, message: $0) }
        guard let start = lines.firstIndex(where: { (try? PolicyLine($0, fail: noError)) == .header(.group(group)) })
        else { return nil }
        var end = start + 1
        while end < lines.count {
            if case .header? = try? PolicyLine(lines[end], fail: noError) { break }
            end += 1
        }
        return start..<end
    }

    /// Whether `line` is `member = identity`.
    private static func isMember(_ line: String, _ identity: String) -> Bool {
        let parsed = try? PolicyLine(line, fail: { ConfigurationError(file: "", line: 0, message: $0) })
        return parsed == .setting(key: "member", value: identity)
    }
}
