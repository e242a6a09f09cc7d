public import FoundationEssentials
package import KeychainCore
public import SecretStore

/// The settings read from `secretd.conf` (see secretd.conf(5)).
///
/// The file has one `key = value` per line; `#` starts a comment. Unknown keys and bad values
/// are errors, so a typo never silently weakens a setting.
public struct Configuration: Equatable, Sendable {
    /// Lock every password-protected keyring after this many seconds without a client call;
    /// 0 (the default) never locks on idle.
    public var lockAfterIdle: Int = 0
    /// Lock every keyring when systemd-logind announces that the machine is about to sleep
    /// (`PrepareForSleep`); off by default.
    public var lockOnSuspend = false
    /// Lock every keyring when one of the user's sessions locks its screen (logind's `Lock`,
    /// as `loginctl lock-session` and desktops send it); off by default.
    public var lockOnScreenLock = false
    /// The pinentry program that asks for passwords when a client needs a prompt; nil (the
    /// default) completes every prompt as dismissed at once.
    public var pinentry: String?
    /// Who may ask for the desktop portal's app keys (`org.freedesktop.impl.portal.Secret`):
    /// the portal frontend, as secretd identifies it (its systemd user service, or its
    /// executable when something else started it). Apps never reach the backend themselves.
    package var portalFrontends: [CallerIdentity] = Self.defaultPortalFrontends

    /// xdg-desktop-portal, as Debian installs and starts it.
    package static let defaultPortalFrontends = [
        CallerIdentity(kind: .unit, name: "xdg-desktop-portal.service"),
        CallerIdentity(kind: .exe, name: "/usr/libexec/xdg-desktop-portal"),
    ]

    /// How secretd reaches the TPM of the login keyring's TPM slot (`secretctl tpm enroll`): a
    /// libtss2 TCTI configuration such as `device:/dev/tpmrm0`; nil (the default) lets libtss2
    /// choose (`/dev/tpmrm0`, then `/dev/tpm0`, …).
    public var tpmTCTI: String?
    /// How often a synced keyring syncs when nothing changes locally (`secretctl sync`), in
    /// seconds; 300 by default. Local changes sync a few seconds after they are made.
    public var syncInterval: Int = 300
    /// Seconds between two automatic backups of the whole store (`backup-interval`: `1d`,
    /// `12h`, `30m`, `3600`; `0` or `off` turns them off); a day by default, so that a keychain
    /// people trust with everything always has a recent verified copy.
    public var backupInterval: Int = 86_400
    /// How many automatic backups are kept (`backup-keep`, at least 1); 7 by default: a week
    /// of daily copies, the oldest removed as each new one is taken.
    public var backupKeep: Int = 7
    /// Where the automatic backups go (`backup-directory`, an absolute path); nil (the
    /// default): `backups/` in the data directory (`$XDG_DATA_HOME/secretd/backups`).
    public var backupDirectory: String?

    /// How much one program (a caller's identity) may store: its items (`quota-items`, 200,000
    /// by default) and their sealed bytes (`quota-bytes`, 1 GiB); and how large the database
    /// file may grow (`quota-database`, 4 GiB).
    public var quota = Store.Quota(items: 200_000, bytes: 1 << 30, databaseBytes: 4 << 30)

    /// How many days the audit trail keeps its entries (`audit-keep`); 0 keeps no trail. 90
    /// by default: long enough to look back after a holiday or a late-noticed compromise, short
    /// enough that the trail stays small (about 300 bytes an entry).
    public var auditKeepDays: Int = 90

    /// Whether a member's first read of an access group's secrets asks the person (`consent`),
    /// for every group that does not say otherwise in access-groups.conf. `no` by default:
    /// asking is for a desktop with a pinentry; on by default it would refuse every script,
    /// CI job and headless server until someone allowed each program.
    public var readerConsent: ReaderConsentMode = .no

    /// The defaults.
    public init() {}

    /// The file name inside the configuration directory.
    public static let fileName = "secretd.conf"

    /// Reads `secretd.conf` from `directory`; the defaults when the file does not exist.
    public static func load(from directory: URL) throws(ConfigurationError) -> Configuration {
        let url = directory.appendingPathComponent(fileName)
        guard FileManager.default.fileExists(atPath: url.path) else { return Configuration() }
        guard let data = FileManager.default.contents(atPath: url.path),
            let text = String(data: data, encoding: .utf8)
        else { throw ConfigurationError(file: url.path, line: 0, message: "cannot be read as UTF-8 text") }
        return try parse(text, file: url.path)
    }

    /// Parses the text of a configuration file.
    public static func parse(_ text: String, file: String) throws(ConfigurationError) -> Configuration {
        var configuration = Configuration()
        for (index, rawLine) in text.lines.enumerated() {
            let line = rawLine.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let trimmed = line.trimmingWhitespace  // a CRLF line keeps its CR
            if trimmed.isEmpty { continue }
            let parts = trimmed.split(separator: "=", maxSplits: 1).map { $0.trimmingWhitespace }
            guard parts.count == 2, !parts[0].isEmpty else {
                throw ConfigurationError(file: file, line: index + 1, message: "expected 'key = value'")
            }
            switch parts[0] {
            case "lock-after-idle":
                guard let seconds = Int(parts[1]), seconds >= 0 else {
                    throw ConfigurationError(file: file, line: index + 1, message: "lock-after-idle takes a number of seconds")
                }
                configuration.lockAfterIdle = seconds
            case "lock-on-suspend", "lock-on-screen-lock":
                guard let flag = ["yes": true, "no": false, "true": true, "false": false][parts[1]] else {
                    throw ConfigurationError(file: file, line: index + 1, message: "\(parts[0]) takes yes or no")
                }
                if parts[0] == "lock-on-suspend" { configuration.lockOnSuspend = flag } else { configuration.lockOnScreenLock = flag }
            case "pinentry":
                guard parts[1].hasPrefix("/") else {
                    throw ConfigurationError(file: file, line: index + 1, message: "pinentry takes an absolute path")
                }
                configuration.pinentry = parts[1]
            case "tpm-tcti":
                guard !parts[1].contains(where: \.isWhitespace) else {
                    throw ConfigurationError(
                        file: file, line: index + 1, message: "tpm-tcti takes a TCTI such as device:/dev/tpmrm0 or swtpm:port=2321")
                }
                configuration.tpmTCTI = parts[1]
            case "sync-interval":
                guard let seconds = Int(parts[1]), seconds >= 1 else {
                    throw ConfigurationError(file: file, line: index + 1, message: "sync-interval takes a number of seconds, at least 1")
                }
                configuration.syncInterval = seconds
            case "audit-keep":
                let value = parts[1].hasSuffix("d") ? String(parts[1].dropLast()) : parts[1]
                guard let days = Int(value), days >= 0, days <= 36_500 else {
                    throw ConfigurationError(file: file, line: index + 1, message: "audit-keep takes a number of days (0: no audit trail)")
                }
                configuration.auditKeepDays = days
            case "consent":
                guard let mode = ReaderConsentMode(rawValue: parts[1]) else {
                    throw ConfigurationError(file: file, line: index + 1, message: "consent takes \(ReaderConsentMode.names)")
                }
                configuration.readerConsent = mode
            case "backup-interval":
                guard let seconds = Self.interval(parts[1]), seconds == 0 || seconds >= 60 else {
                    throw ConfigurationError(
                        file: file, line: index + 1,
                        message: "backup-interval takes a time of at least a minute (seconds, or with m, h or d: 1d), or 0 or off")
                }
                configuration.backupInterval = seconds
            case "backup-keep":
                guard let count = Int(parts[1]), count >= 1 else {
                    throw ConfigurationError(file: file, line: index + 1, message: "backup-keep takes a number of backups, at least 1")
                }
                configuration.backupKeep = count
            case "backup-directory":
                guard parts[1].hasPrefix("/") else {
                    throw ConfigurationError(file: file, line: index + 1, message: "backup-directory takes an absolute path")
                }
                configuration.backupDirectory = parts[1]
            case "quota-items":
                guard let count = Int(parts[1]), count >= 1 else {
                    throw ConfigurationError(file: file, line: index + 1, message: "quota-items takes a number of items, at least 1")
                }
                configuration.quota.items = count
            case "quota-bytes", "quota-database":
                guard let bytes = Self.size(parts[1]), bytes >= 1 else {
                    throw ConfigurationError(
                        file: file, line: index + 1, message: "\(parts[0]) takes a size in bytes, or with K, M or G (1024-based): 512M")
                }
                if parts[0] == "quota-bytes" { configuration.quota.bytes = bytes } else { configuration.quota.databaseBytes = bytes }
            case "portal-frontends":
                let names = parts[1].split(separator: ",", omittingEmptySubsequences: false)
                let frontends = names.compactMap { CallerIdentity(parsing: $0.trimmingWhitespace) }
                guard !frontends.isEmpty, frontends.count == names.count,
                    frontends.allSatisfy({ $0.kind == .unit || $0.kind == .exe })
                else {
                    throw ConfigurationError(
                        file: file, line: index + 1,
                        message: "portal-frontends takes a comma-separated list of unit:NAME and exe:/PATH identities")
                }
                configuration.portalFrontends = frontends
            default:
                throw ConfigurationError(file: file, line: index + 1, message: "unknown setting '\(parts[0])'")
            }
        }
        return configuration
    }
}

extension Configuration {
    /// A time written as seconds, optionally followed by s, m, h or d; `off` is 0.
    static func interval(_ text: String) -> Int? {
        if text == "off" { return 0 }
        let units: [Character: Int] = ["s": 1, "m": 60, "h": 3_600, "d": 86_400]
        guard let last = text.last else { return nil }
        let (digits, unit) = units[last].map { (text.dropLast(), $0) } ?? (Substring(text), 1)
        guard let number = Int(digits), number >= 0 else { return nil }
        let (seconds, overflow) = number.multipliedReportingOverflow(by: unit)
        return overflow ? nil : seconds
    }

    /// A size written as a number of bytes, optionally followed by K, M or G (powers of 1024).
    static func size(_ text: String) -> Int? {
        let units: [Character: Int] = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30]
        guard let last = text.last else { return nil }
        let (digits, unit) = units[last].map { (text.dropLast(), $0) } ?? (Substring(text), 1)
        guard let number = Int(digits), number >= 0 else { return nil }
        let (bytes, overflow) = number.multipliedReportingOverflow(by: unit)
        return overflow ? nil : bytes
    }
}

/// A problem in `secretd.conf`, with where it is.
public struct ConfigurationError: Error, Equatable, CustomStringConvertible {
    /// The file.
    public var file: String
    /// The line number (1-based; 0 for the whole file).
    public var line: Int
    /// What is wrong.
    public var message: String

    /// `file:line: message`.
    public var description: String { line > 0 ? "\(file):\(line): \(message)" : "\(file): \(message)" }
}
