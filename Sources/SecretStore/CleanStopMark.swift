import FoundationEssentials
import Glibc

/// What a clean stop leaves beside the database (`secretd.sqlite3.checked`, 0600): that the
/// file passed SQLite's quick check as it closed, and what the file was then (device, inode,
/// size, modification and change times, to the nanosecond).
///
/// The next start skips the check, which reads the whole file (286 ms at 100,000 items), when
/// the file is still exactly that, has no write-ahead log, changed before the mark was written
/// (the kernel's file clock ticks in milliseconds: a write in the same tick as the close could
/// keep the times) and the check is at most ``maximumAge`` old. Any write through the file
/// system moves the change time, which no program can set back; a crash leaves the log; so
/// what is skipped is only a check of a file nothing has written since it passed. The start
/// that opens the file removes the mark. What it does not see is damage below the file system
/// while secretd was stopped; ``maximumAge`` bounds how long that can go unchecked.
struct CleanStopMark: Equatable {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    var modified: timespec
    var changed: timespec

    /// How long a check at a clean stop stands in for one at start (7 days).
    static let maximumAge: Int = 7 * 86_400

    /// The mark's file beside `database`.
    static func path(beside database: URL) -> String { database.path + ".checked" }

    /// The state of the file at `path`; nil when it cannot be read.
    init?(ofFileAt path: String) {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        self.init(status)
    }

    private init(_ status: stat) {
        device = UInt64(status.st_dev)
        inode = UInt64(status.st_ino)
        size = Int64(status.st_size)
        modified = status.st_mtim
        changed = status.st_ctim
    }

    /// Whether the mark beside `database` vouches for it as it is now (`now`: seconds since
    /// 1970). The mark is left in place: a file refused at start stays exactly as it was.
    static func vouches(for database: URL, now: Int = currentSeconds()) -> Bool {
        let markPath = path(beside: database)
        var markStatus = stat()
        guard stat(markPath, &markStatus) == 0, markStatus.st_size < 4096,
            let text = try? String(contentsOfFile: markPath, encoding: .utf8),
            let recorded = CleanStopMark(text: text),
            let current = CleanStopMark(ofFileAt: database.path), current == recorded
        else { return false }
        var logStatus = stat()
        if stat(database.path + "-wal", &logStatus) == 0 && logStatus.st_size > 0 { return false }
        guard Self.isBefore(current.changed, markStatus.st_ctim) else { return false }
        let age = now - markStatus.st_ctim.tv_sec
        return age >= 0 && age <= maximumAge
    }

    /// The clock's seconds, read as finely as file times are set. Not `time(nil)`: that reads
    /// the coarse clock, which lags the fine one by up to a tick, and file systems with
    /// fine-grained change times (Linux 6.13 on) can stamp a file a second ahead of it at a
    /// second's turn, so that a mark just written would look as if it came from the future.
    static func currentSeconds() -> Int {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return now.tv_sec
    }

    /// Removes the mark beside `database`: once the file is open and in use, so that it
    /// vouches for one start only.
    static func remove(beside database: URL) { unlink(path(beside: database)) }

    /// Writes the mark for `database` as it is now, after it passed its check and was closed
    /// (no write-ahead log); does nothing when it cannot (the next start checks the file).
    /// Waits for the file clock to tick past the database's change time first, so that no
    /// later write can leave the database with the time the mark records.
    static func write(beside database: URL) {
        guard let mark = CleanStopMark(ofFileAt: database.path) else { return }
        let markPath = path(beside: database)
        let text = Array(mark.text.utf8)
        for _ in 0..<200 {  // the file clock ticks every few ms; 200 ms at most
            let file = open(markPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
            guard file >= 0 else { return }
            let written = text.withUnsafeBytes { Glibc.write(file, $0.baseAddress, $0.count) }
            var markStatus = stat()
            let stated = fstat(file, &markStatus) == 0
            Glibc.close(file)
            guard written == text.count, stated else { break }
            if isBefore(mark.changed, markStatus.st_ctim) { return }
            usleep(1_000)
        }
        unlink(markPath)
    }

    /// Whether `earlier` is strictly before `later`.
    private static func isBefore(_ earlier: timespec, _ later: timespec) -> Bool {
        (earlier.tv_sec, earlier.tv_nsec) < (later.tv_sec, later.tv_nsec)
    }

    /// One line: `device inode size mtime-s mtime-ns ctime-s ctime-ns`.
    private var text: String {
        "\(device) \(inode) \(size) \(modified.tv_sec) \(modified.tv_nsec) \(changed.tv_sec) \(changed.tv_nsec)\n"
    }

    private init?(text: String) {
        let fields = text.split(whereSeparator: { $0 == " " || $0 == "\n" })
        guard fields.count == 7, let device = UInt64(fields[0]), let inode = UInt64(fields[1]), let size = Int64(fields[2]),
            let modifiedSeconds = Int(fields[3]), let modifiedNanoseconds = Int(fields[4]),
            let changedSeconds = Int(fields[5]), let changedNanoseconds = Int(fields[6])
        else { return nil }
        self.device = device
        self.inode = inode
        self.size = size
        modified = timespec(tv_sec: modifiedSeconds, tv_nsec: modifiedNanoseconds)
        changed = timespec(tv_sec: changedSeconds, tv_nsec: changedNanoseconds)
    }

    static func == (left: CleanStopMark, right: CleanStopMark) -> Bool {
        left.device == right.device && left.inode == right.inode && left.size == right.size
            && left.modified.tv_sec == right.modified.tv_sec && left.modified.tv_nsec == right.modified.tv_nsec
            && left.changed.tv_sec == right.changed.tv_sec && left.changed.tv_nsec == right.changed.tv_nsec
    }
}
