import KeychainCore
import FoundationEssentials
import Keychain

/// `secretctl sync ACTION [ARGUMENT]`: secretd's sync of a keyring between a person's machines,
/// end-to-end encrypted, through a git remote they already have.
enum SyncCommand: Verb {
    /// `ACTION`: what to do.
    static let action = Positional<String>("ACTION", help: "init, join, approve, remove, now, status or leave.")
    /// `REMOTE` (init, join) or `DEVICE` (approve, remove).
    static let argument = Positional<String?>(
        "REMOTE|DEVICE", help: "The git remote (init, join: a path, ssh://…, user@host:path) or a device id (approve, remove).")
    /// `--collection NAME`: another keyring than the login keyring.
    static let collection = LongOption<String?>(
        "collection", value: "NAME", help: "Sync this keyring instead of the login keyring (by its name, e.g. work).")
    /// `--code CODE`: with approve, the code the new machine shows (else it is asked for).
    static let code = LongOption<String?>(
        "code", value: "CODE", help: "With approve: the code the joining machine shows (asked for on a terminal when not given).")

    static let spec = CommandSpec(
        name: "sync", abstract: "Sync a keyring between your machines through a git remote, end-to-end encrypted (secretd).",
        arguments: [action, argument], options: [collection, code, Common.json],
        examples: [
            "secretctl sync init git@example.com:me/secrets.git", "secretctl sync join git@example.com:me/secrets.git",
            "secretctl sync approve 3f2a… --code 123-456", "secretctl sync status --json", "secretctl sync now",
            "secretctl sync remove 3f2a…",
        ])

    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        let keyring = parsed[Self.collection] ?? SecretServiceNames.loginCollection
        let argument = parsed[Self.argument]
        func required(_ what: String) throws(CommandLineError) -> String {
            guard let argument, !argument.isEmpty else { throw .usage("sync \(parsed[Self.action]) needs \(what)", command: spec.name) }
            return argument
        }
        switch parsed[Self.action] {
        case "init", "join":
            let joining = parsed[Self.action] == "join"
            let remote = try required("the git remote")
            let (device, code) = try CommandLineError.keychain { () throws(KeychainError) in
                try KeychainProvider.startSync(keyring: keyring, remote: remote, joining: joining)
            }
            if joining {
                Terminal.writeOutput("""
                    This machine is device \(device); it asked to join the vault at \(remote).
                    Its code is \(code). On a machine of the vault, run
                        secretctl sync approve \(device)
                    and check that it shows the same code. Items arrive at the next sync after that.

                    """)
            } else {
                Terminal.writeOutput("The keyring \(keyring) syncs with \(remote) from now on; this machine is device \(device).\n")
            }
        case "approve":
            let device = try required("the id of the device to approve (secretctl sync status lists those waiting)")
            var typed = parsed[Self.code]
            if typed == nil {
                guard Terminal.isTerminal(0) else {
                    throw .usage("give the code the joining machine shows with --code (it is asked for on a terminal)", command: spec.name)
                }
                Terminal.writeError("The code device \(device) shows: ")
                typed = readLine(strippingNewline: true)
            }
            let code = typed ?? ""
            try CommandLineError.keychain { () throws(KeychainError) in try KeychainProvider.approveSyncDevice(device, code: code, keyring: keyring) }
            Terminal.writeError("secretctl: device \(device) may now read and write the keyring \(keyring)\n")
        case "remove":
            let device = try required("the id of the device to remove")
            try CommandLineError.keychain { () throws(KeychainError) in try KeychainProvider.removeSyncDevice(device, keyring: keyring) }
            Terminal.writeError("secretctl: removed device \(device); the vault key was replaced, so it cannot read what is written from now on\n")
        case "leave":
            try CommandLineError.keychain { () throws(KeychainError) in try KeychainProvider.leaveSync(keyring: keyring) }
            Terminal.writeError("secretctl: the keyring \(keyring) no longer syncs on this machine; its items stay\n")
        case "now":
            let round = try CommandLineError.keychain { () throws(KeychainError) in try KeychainProvider.syncNow(keyring: keyring) }
            if parsed[Common.json] {
                try Output.json(["published": round.published, "received": round.received, "conflicts": round.conflicts, "refused": round.refused])
            } else {
                Terminal.writeOutput("synced: \(round.published) out, \(round.received) in, \(round.conflicts) conflicts resolved\n")
                for refusal in round.refused { Terminal.writeOutput("refused: \(refusal)\n") }
            }
        case "status":
            let status = try CommandLineError.keychain { () throws(KeychainError) in try KeychainProvider.syncStatus(keyring: keyring) }
            try show(status, keyring: keyring, json: parsed[Common.json])
        case let other:
            throw .usage("unknown sync action '\(other)' (init, join, approve, remove, now, status, leave)", command: spec.name)
        }
    }

    /// `sync status`, as text or JSON.
    private static func show(_ status: KeychainProvider.SyncStatus, keyring: String, json: Bool) throws(CommandLineError) {
        let lastSync = status.lastSync == 0 ? nil : Date(timeIntervalSince1970: Double(status.lastSync)).formatted(.iso8601)
        if json {
            let fields: [String: Any?] = [
                "keyring": keyring, "remote": status.remote, "device": status.device, "waiting_for_approval": status.waiting,
                "code": status.waiting ? status.code : nil, "devices": status.devices,
                "pending": status.pending.map { ["device": $0.device, "code": $0.code] }, "last_sync": lastSync,
                "last_error": status.lastError.isEmpty ? nil : status.lastError, "unpublished_changes": status.unpublished,
                "conflicts_resolved": status.conflictsResolved, "refused": status.refused,
            ]
            return try Output.json(fields)
        }
        var text = "keyring \(keyring) syncs with \(status.remote)\n"
        text += "this device: \(status.device)\n"
        if status.waiting {
            text += "waiting for approval: code \(status.code) (on a machine of the vault: secretctl sync approve \(status.device))\n"
        }
        text += "devices: \(status.devices.count)" + (status.devices.isEmpty ? "" : " (\(status.devices.joined(separator: ", ")))") + "\n"
        for (device, code) in status.pending where device != status.device {
            text += "asks to join: \(device) code \(code) (secretctl sync approve \(device))\n"
        }
        text += "last sync: \(lastSync ?? "never")\n"
        if !status.lastError.isEmpty { text += "last error: \(status.lastError)\n" }
        text += "unpublished changes: \(status.unpublished)\n"
        text += "conflicts resolved: \(status.conflictsResolved)\n"
        for refusal in status.refused { text += "refused: \(refusal)\n" }
        Terminal.writeOutput(text)
    }
}
