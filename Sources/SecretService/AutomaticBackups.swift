import FoundationEssentials
import Glibc
import SecretStore

/// secretd's automatic backups (`backup-interval`, `backup-keep`, `backup-directory` in
/// secretd.conf): every interval, on the main loop between calls, the same verified copy
/// `secretctl backup` writes (``MaintenanceObject/writeBackup(to:replacing:)``), named
/// `secretd-YYYYMMDD-HHMMSS.sqlite3` (UTC) in a 0700 directory, each file 0600; the oldest
/// beyond `backup-keep` are removed. A backup that fails is logged (never with a secret) and
/// tried again an interval later. Time is the provider's clock, so tests move it by hand.
final class AutomaticBackups {
    /// Where the backups go.
    let directory: URL
    /// Seconds between two backups; 0: none are taken.
    let interval: Int
    /// How many are kept.
    let keep: Int
    /// Why the last attempt failed; nil when it did not (or none was made).
    private(set) var lastFailure: String?
    /// The provider whose store is copied (unowned: the provider holds this).
    private unowned let provider: Provider
    /// The last backup taken or found; read from the directory once.
    private var last: (path: String, date: Date)??
    /// When the last attempt, successful or not, was made.
    private var lastAttempt: Date?

    /// The file names start with this, and end with ``suffix``.
    static let prefix = "secretd-"
    static let suffix = ".sqlite3"

    /// The automatic backups of `provider`, as its configuration sets them.
    init(provider: Provider) {
        self.provider = provider
        let configuration = provider.options.configuration
        directory = configuration.backupDirectory.map { URL(fileURLWithPath: $0) }
            ?? provider.options.dataDirectory.appendingPathComponent("backups")
        interval = configuration.backupInterval
        keep = configuration.backupKeep
    }

    /// The newest backup: the last one this secretd took, or the newest in the directory.
    func lastBackup() -> (path: String, date: Date)? {
        if let last { return last }
        let found = backups().last.map { (path: directory.appendingPathComponent($0.name).path, date: $0.date) }
        last = .some(found)
        return found
    }

    /// Whether a backup is due at `now`: they are on, and an interval has passed since the
    /// last backup and since the last attempt.
    func isDue(at now: Date) -> Bool {
        guard interval > 0 else { return false }
        let since = [lastBackup()?.date, lastAttempt].compactMap { $0 }.max()
        return since.map { now.timeIntervalSince($0) >= Double(interval) } ?? true
    }

    /// Takes a backup when one is due (``isDue(at:)``); returns its path when it took one.
    @discardableResult
    func takeIfDue() -> String? {
        let now = provider.clock()
        guard isDue(at: now) else { return nil }
        return take(at: now)
    }

    /// Takes a backup now, then removes the oldest beyond ``keep``; nil (logged) when it failed.
    func take(at now: Date) -> String? {
        lastAttempt = now
        let path = directory.appendingPathComponent(Self.fileName(at: now)).path
        do throws(StoreError) {
            try makeDirectory()
            let report = try MaintenanceObject(provider).writeBackup(to: path, replacing: false)
            last = .some((path, now))
            lastFailure = nil
            Log.info("wrote the automatic backup \(path): \(report.keyrings) keyrings, \(report.opened) items verified")
        } catch {
            lastFailure = "\(error)"
            Log.warning("cannot write the automatic backup \(path): \(error); secretd tries again in \(interval) s")
            return nil
        }
        prune()
        return path
    }

    /// Removes the oldest backups beyond ``keep``.
    private func prune() {
        for old in backups().dropLast(keep) {
            let path = directory.appendingPathComponent(old.name).path
            if unlink(path) == 0 {
                Log.info("removed the old automatic backup \(path)")
            } else {
                Log.warning("cannot remove the old automatic backup \(path): \(String(cString: strerror(errno)))")
            }
        }
    }

    /// The backups in the directory, oldest first (their names sort by time).
    private func backups() -> [(name: String, date: Date)] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.compactMap { name in Self.date(of: name).map { (name, $0) } }.sorted { $0.name < $1.name }
    }

    /// Creates the directory (and its parents) 0700 if it is missing, each synced into its
    /// parent (``Store/makePrivateDirectory(_:what:)``), and makes it 0700.
    private func makeDirectory() throws(StoreError) {
        try Store.makePrivateDirectory(directory.path, what: "the backup directory")
    }

    // MARK: - Names

    /// `secretd-YYYYMMDD-HHMMSS.sqlite3` for `date`, in UTC.
    static func fileName(at date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return prefix + "\(parts.tm_year + 1900)\(two(parts.tm_mon + 1))\(two(parts.tm_mday))-"
            + "\(two(parts.tm_hour))\(two(parts.tm_min))\(two(parts.tm_sec))" + suffix
    }

    /// The time in the name of an automatic backup; nil for any other name.
    static func date(of name: String) -> Date? {
        guard name.hasPrefix(prefix), name.hasSuffix(suffix) else { return nil }
        let stamp = Array(name.dropFirst(prefix.count).dropLast(suffix.count).utf8)
        guard stamp.count == 15, stamp[8] == UInt8(ascii: "-") else { return nil }
        func number(_ range: Range<Int>) -> Int32? {
            let digits = stamp[range]
            guard digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
            return Int32(String(decoding: digits, as: UTF8.self))
        }
        guard let year = number(0..<4), let month = number(4..<6), let day = number(6..<8), let hour = number(9..<11),
            let minute = number(11..<13), let second = number(13..<15)
        else { return nil }
        var parts = tm()
        parts.tm_year = year - 1900
        parts.tm_mon = month - 1
        parts.tm_mday = day
        parts.tm_hour = hour
        parts.tm_min = minute
        parts.tm_sec = second
        let seconds = timegm(&parts)
        guard seconds != -1 else { return nil }
        return Date(timeIntervalSince1970: Double(seconds))
    }
}
