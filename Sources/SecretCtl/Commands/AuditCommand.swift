import KeychainCore
import FoundationEssentials
import Keychain

/// `secretctl audit [--since TIME] [--identity ID] [--item SERVICE [ACCOUNT]] [--json]`: secretd's
/// audit trail: who read, wrote or deleted which secret, what was refused, and when keyrings
/// were unlocked and locked. Only an unconfined program outside a sandbox may read it.
enum AuditCommand: Verb {
    /// `--since TIME`: only entries from then on.
    static let since = LongOption<String?>(
        "since", value: "TIME", help: "Only entries from TIME on: 30m, 12h, 7d ago, or a UTC date or time (2026-12-01, 2026-12-01T08:00:00Z).")
    /// `--identity ID`: only entries of one caller.
    static let identity = LongOption<String?>(
        "identity", value: "ID", help: "Only entries of this caller, as secretctl whoami names it (exe:/usr/bin/secret-tool).")
    /// `--item`: only entries about the item SERVICE (and ACCOUNT).
    static let item = LongOption<Bool>("item", help: "Only entries about the item named by SERVICE (and ACCOUNT).")
    /// `SERVICE`, with `--item`.
    static let service = Positional<String?>("SERVICE", help: "With --item: the item's service.")
    /// `ACCOUNT`, with `--item`.
    static let account = Positional<String?>("ACCOUNT", help: "With --item: the item's account.")

    static let spec = CommandSpec(
        name: "audit",
        abstract: "Show who read, wrote or deleted which secret, what was refused, and unlocks and locks (secretd).",
        arguments: [service, account], options: [since, identity, item, Common.json],
        examples: [
            "secretctl audit --since 1h", "secretctl audit --identity exe:/usr/bin/python3.11",
            "secretctl audit --item --since 7d com.example.mail alice", "secretctl audit --json",
        ])

    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        let itemService = parsed[service]
        if parsed[item] != (itemService != nil) {
            throw .usage(parsed[item] ? "--item needs SERVICE (and optionally ACCOUNT)" : "SERVICE and ACCOUNT go with --item", command: spec.name)
        }
        var start: Int64 = 0
        if let text = parsed[since] {
            guard let date = Self.time(text, now: Date()) else {
                throw .usage("--since takes 30m, 12h or 7d (ago), or a UTC date or time such as 2026-12-01 or 2026-12-01T08:00:00Z", command: spec.name)
            }
            start = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        }
        let reading = try CommandLineError.keychain { () throws(KeychainError) in try KeychainProvider.readAudit(since: start) }
        let entries = reading.entries.filter { entry in
            (parsed[identity].map { $0 == entry.identity } ?? true)
                && (itemService.map { $0 == entry.service } ?? true)
                && (parsed[account].map { $0 == entry.account } ?? true)
        }
        if parsed[Common.json] {
            try Output.json([
                "entries": entries.map(json), "unreadable": reading.unreadable, "locked_keyrings": reading.lockedKeyrings,
            ] as [String: Any])
            return
        }
        for entry in entries { Terminal.writeOutput(line(entry) + "\n") }
        if entries.isEmpty { Terminal.writeError("secretctl: no entries\n") }
        if reading.unreadable > 0 {
            let keyrings = reading.lockedKeyrings.isEmpty ? "" : ": unlock \(reading.lockedKeyrings.joined(separator: ", ")) to read them"
            Terminal.writeError("secretctl: \(reading.unreadable) sealed records of entries could not be opened\(keyrings)\n")
        }
    }

    /// TIME as `--since` takes it: `N` followed by `m`, `h` or `d` ago, or an ISO 8601 UTC date
    /// or date and time; nil when it is neither.
    static func time(_ text: String, now: Date) -> Date? {
        let units: [Character: Double] = ["m": 60, "h": 3600, "d": 86_400]
        if let unit = text.last.flatMap({ units[$0] }), let count = Double(text.dropLast()), count >= 0 {
            return now.addingTimeInterval(-count * unit)
        }
        let full = text.count == 10 ? text + "T00:00:00Z" : (text.hasSuffix("Z") ? text : text + "Z")
        return try? Date(full, strategy: .iso8601)
    }

    /// One entry as a line: time, event, who, what, how.
    static func line(_ entry: KeychainProvider.AuditEntry) -> String {
        var who = entry.identity
        if let pid = entry.pid { who += " (pid \(pid))" }
        var what: [String] = []
        if let keyring = entry.keyring { what.append("keyring \(keyring)") }
        if let id = entry.itemID {
            var name = "item \(id)"
            if let service = entry.service { name += " \(service)" + (entry.account.map { "/\($0)" } ?? "") }
            if let label = entry.label { name += " “\(label)”" }
            if let group = entry.group, group != AccessGroupNames.defaultGroup { name += " [\(group)]" }
            what.append(name)
        }
        let fields = [timestamp(entry.time), entry.event, who, what.joined(separator: ", "), entry.detail ?? ""]
        return fields.filter { !$0.isEmpty }.joined(separator: "  ")
    }

    /// An entry as `--json` prints it (keys documented in secretctl(1)).
    static func json(_ entry: KeychainProvider.AuditEntry) -> [String: Any] {
        var object: [String: Any] = ["time": timestamp(entry.time), "event": entry.event, "identity": entry.identity]
        if let pid = entry.pid { object["pid"] = Int(pid) }
        if let command = entry.command { object["command"] = command }
        if let keyring = entry.keyring { object["keyring"] = keyring }
        if let id = entry.itemID { object["item"] = Int(id) }
        if let group = entry.group { object["group"] = group }
        if let label = entry.label { object["label"] = label }
        if let service = entry.service { object["service"] = service }
        if let account = entry.account { object["account"] = account }
        if let detail = entry.detail { object["detail"] = detail }
        return object
    }

    private static func timestamp(_ milliseconds: Int64) -> String {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000).formatted(.iso8601)
    }
}
