import Glibc
import KeychainCore

/// A progress bar on standard error while a bulk verb (`import FILE`, `export`) works through
/// many items: only when standard error is a terminal (nothing when it is piped or a file), and
/// only counts, never a label, an attribute or a secret. It redraws one line with `\r` at most
/// ten times a second and clears it when done, so what the verb prints after is unchanged.
struct ProgressBar {
    /// What is being done, such as `importing`.
    private let what: String
    /// How many items there are in all.
    private let total: Int
    /// When the line was last drawn (monotonic seconds).
    private var drawn = 0.0
    /// Whether a line is on the screen.
    private var shown = false

    /// A bar for `total` items, or nil when standard error is not a terminal or there are
    /// fewer than `minimum` items (a bar that would only flash).
    init?(_ what: String, total: Int, minimum: Int = 1000) {
        guard total >= minimum, Terminal.isTerminal(STDERR_FILENO) else { return nil }
        self.what = what
        self.total = total
    }

    /// Shows that `done` of the items are done.
    mutating func show(_ done: Int) {
        let now = MonotonicClock.seconds
        guard done >= total || now - drawn >= 0.1 else { return }
        drawn = now
        shown = true
        Terminal.writeError("\r\u{1B}[K" + Self.line(what, done: min(done, total), total: total))
    }

    /// Clears the line.
    mutating func finish() {
        if shown { Terminal.writeError("\r\u{1B}[K") }
        shown = false
    }

    /// The text of the bar: `importing [#####---------------] 25% 25000/100000 items`.
    static func line(_ what: String, done: Int, total: Int, width: Int = 30) -> String {
        let filled = total > 0 ? done * width / total : width
        let percent = total > 0 ? done * 100 / total : 100
        return "\(what) [" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
            + "] \(percent)% \(done)/\(total) items"
    }

}
