import FoundationEssentials
import Glibc
import Keychain
import KeychainCore

/// `secretctl export FILE`: every item this process can see, sealed under a passphrase in
/// ``ExportFile``'s format, or with `--format csv` in the clear as the browsers' CSV
/// (``CSVExport``), after a warning; items of a device-only class only when asked.
enum ExportCommand: Verb {
    /// `FILE`, created with mode 0600.
    static let file = Positional<String>("FILE", help: "The file to create (mode 0600).")
    /// `--force`: overwrite FILE.
    static let force = LongOption<Bool>("force", help: "Overwrite FILE if it exists.")
    /// `--include-device-only`: export items whose class says they stay on this machine.
    static let includeDeviceOnly = LongOption<Bool>(
        "include-device-only", help: "Also export items of the classes *-device-only, which otherwise stay on this machine.")
    /// `--format FORMAT`: `export` (sealed, the default), `kdbx` (a KeePass database) or `csv` (in the clear).
    static let format = LongOption<String?>(
        "format", value: "FORMAT",
        help: "export: sealed with a passphrase (the default); kdbx: a KeePass database (KDBX 4) that KeePassXC opens with the passphrase; csv: the browsers' name,url,username,password,note, in the clear.")
    /// `--yes`: write a CSV file without asking.
    static let yes = LongOption<Bool>("yes", help: "With --format csv: write the secrets in the clear without asking (needed without a terminal).")

    static let spec = CommandSpec(
        name: "export", abstract: "Write every item you can see to FILE, encrypted with a passphrase, as a KeePass database, or as CSV in the clear.",
        arguments: [file], options: [force, includeDeviceOnly, format, yes],
        examples: [
            "secretctl export keyring.export          # asks for a passphrase twice",
            "secretctl export --format kdbx keyring.kdbx   # KeePassXC opens it with the passphrase",
            "secretctl export --format csv passwords.csv   # asks before writing secrets in the clear",
        ])

    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        let path = parsed[Self.file]
        let format = parsed[Self.format] ?? "export"
        guard ["export", "csv", "kdbx"].contains(format) else {
            throw .usage("unknown format '\(format)': export, kdbx or csv", command: spec.name)
        }
        guard format == "csv" || !parsed[Self.yes] else { throw .usage("--yes goes with --format csv", command: spec.name) }
        let matches = try readAll()
        // A partial export would look complete; refuse it while anything is locked.
        let locked = matches.filter { $0.secret == nil }.count
        guard locked == 0 else {
            throw .failure("\(locked) items are in a locked keyring; unlock it (secretctl unlock) and retry", status: .locked)
        }
        let deviceOnly = matches.filter { ItemAccessibility(attributes: $0.attributes).isDeviceOnly }.count
        let exported = parsed[Self.includeDeviceOnly] ? matches : matches.filter { !ItemAccessibility(attributes: $0.attributes).isDeviceOnly }
        let items = exported.compactMap { match in
            match.secret.map { ExportFile.Item(label: match.label, attributes: match.attributes, secret: $0) }
        }
        var leftOut = 0
        var sealed: [UInt8]
        switch format {
        case "csv":
            try confirmClearText(path, yes: parsed[Self.yes])
            (sealed, leftOut) = CSVExport.bytes(of: items)
        case "kdbx":
            let entries = exported.compactMap { match in
                match.secret.map {
                    KDBXExport.Entry(
                        collection: SecretServiceNames.Path.collectionName(ofItem: match.path) ?? SecretServiceNames.loginCollection, label: match.label,
                        attributes: match.attributes, secret: $0, created: match.created, modified: match.modified)
                }
            }
            var passphrase = try ExportPassphrase.read(confirm: true)
            defer { passphrase.wipe() }
            (sealed, leftOut) = try KDBXExport.database(entries, passphrase: passphrase)
        default:
            var passphrase = try ExportPassphrase.read(confirm: true)
            defer { passphrase.wipe() }
            sealed = try ExportFile.seal(items, passphrase: passphrase)
        }
        defer { sealed.wipe() }
        let flags = O_WRONLY | O_CREAT | O_CLOEXEC | (parsed[Self.force] ? O_TRUNC : O_EXCL)
        let file = open(path, flags, 0o600)
        guard file >= 0 else {
            throw .failure(errno == EEXIST ? "\(path) exists; use --force to overwrite it" : "cannot create \(path)", status: .usage)
        }
        defer { close(file) }
        let written = sealed.withUnsafeBytes { write(file, $0.baseAddress, $0.count) }
        guard written == sealed.count else { throw .failure("cannot write \(path)", status: .failed) }
        Terminal.writeOutput("exported \(items.count - leftOut) items to \(path)\n")
        if leftOut > 0 { Terminal.writeOutput("left out \(leftOut) items whose secret is not text (\(format.uppercased()) holds text only)\n") }
        if deviceOnly > 0 && !parsed[Self.includeDeviceOnly] {
            Terminal.writeOutput("left out \(deviceOnly) device-only items (--include-device-only exports them)\n")
        }
    }

    /// Every item and its secret, newest first: from secretd a page of items a call
    /// (`Import1.ReadItems`), with a progress bar on a terminal; when it has no such call or an
    /// item is locked, through libsecret's search, which asks to unlock locked keyrings.
    private static func readAll() throws(CommandLineError) -> [KeychainAttributes.Match] {
        var matches: [KeychainAttributes.Match] = []
        var progress: ProgressBar?
        var complete = try CommandLineError.keychain { () throws(KeychainError) in
            try KeychainAttributes.forEachPage([:], loadSecrets: true) { page, total throws(KeychainError) in
                if matches.isEmpty { progress = ProgressBar("reading", total: total) }
                matches += page
                progress?.show(matches.count)
            }
        }
        progress?.finish()
        if matches.contains(where: { $0.secret == nil }) { complete = false }
        if !complete {
            matches.removeAll()
            matches = try CommandLineError.keychain { () throws(KeychainError) in
                try KeychainAttributes.search([:], unlock: true, loadSecrets: true)
            }
        }
        return matches.sorted { ($0.modified, $0.path) > ($1.modified, $1.path) }
    }

    /// Asks before secrets go into a file in the clear: `--yes`, or `yes` typed on a terminal.
    private static func confirmClearText(_ path: String, yes: Bool) throws(CommandLineError) {
        guard !yes else { return }
        let warning = "\(path) will hold every secret in the clear: anyone who can read the file, a backup of it or the disk it was on reads them"
        guard Terminal.isTerminal(STDIN_FILENO) else { throw .failure("\(warning). Give --yes to write it.", status: .usage) }
        Terminal.writeError("\(warning).\nType yes to write it: ")
        guard readLine(strippingNewline: true)?.trimmingWhitespace == "yes" else { throw .failure("nothing written", status: .usage) }
    }
}
