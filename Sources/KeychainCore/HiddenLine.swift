import Glibc

// Reading a password typed on a terminal, for every part that asks a person for one: secretd's
// `--unlock`, secretctl's prompts and the library's terminal login prompter. One definition of
// how echo goes off and comes back and of how the line is read into memory that is wiped.

/// One line read from a file descriptor into a fixed buffer, without echo on a terminal.
///
/// The bytes never pass through a `String` or a growing array, so no copy is left behind that
/// ``wipe()`` does not reach; call it (or let the value go out of scope after ``withBytes(_:)``)
/// as soon as the line has been used.
package struct HiddenLine: ~Copyable {
    /// The bytes read, without the newline (and without a carriage return before it).
    private let storage: UnsafeMutableRawBufferPointer
    /// How many bytes of ``storage`` are the line.
    package private(set) var count: Int
    /// Whether the line was longer than the limit; the bytes past it were read and dropped.
    package let isTruncated: Bool
    /// Whether input ended before a newline (the line may still hold bytes).
    package let reachedEnd: Bool

    /// Reads one line from `descriptor`, at most `limit` bytes of it kept. With `hidden` on a
    /// terminal, echo is off while the line is typed: `prompt` is written after echo went off
    /// (pending input is discarded, as getpass does) and `newline` once it is back on, since
    /// the newline typed was not echoed. `stopAtNewline` false reads to the end of input.
    package init(
        from descriptor: Int32, limit: Int, hidden: Bool = true, stopAtNewline: Bool = true,
        prompt: () -> Void = {}, newline: () -> Void = {}
    ) {
        storage = .allocate(byteCount: max(limit, 1), alignment: 1)
        storage.initializeMemory(as: UInt8.self, repeating: 0)
        var saved = termios()
        let quiet = hidden && isatty(descriptor) != 0 && tcgetattr(descriptor, &saved) == 0
        if quiet {
            var noEcho = saved
            noEcho.c_lflag &= ~tcflag_t(ECHO)
            tcsetattr(descriptor, TCSAFLUSH, &noEcho)
        }
        prompt()
        var count = 0
        var truncated = false
        var ended = false
        var byte: UInt8 = 0
        while true {
            let result = read(descriptor, &byte, 1)
            if result < 0 && errno == EINTR { continue }
            if result <= 0 {
                ended = true
                break
            }
            if stopAtNewline && byte == UInt8(ascii: "\n") { break }
            if count < limit {
                storage[count] = byte
                count += 1
            } else {
                truncated = true
            }
        }
        byte = 0
        if quiet {
            tcsetattr(descriptor, TCSAFLUSH, &saved)
            newline()
        }
        if stopAtNewline, count > 0, storage[count - 1] == UInt8(ascii: "\r") { count -= 1 }
        self.count = count
        isTruncated = truncated
        reachedEnd = ended
    }

    deinit {
        explicit_bzero(storage.baseAddress!, storage.count)
        storage.deallocate()
    }

    /// Hands the line's bytes to `body`; they are valid only during the call.
    package func withBytes<T, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> T) throws(E) -> T {
        try body(UnsafeRawBufferPointer(rebasing: storage[0..<count]))
    }

    /// Drops one newline at the end of the line, as a line piped in (read to its end) has it.
    package mutating func dropTrailingNewline() {
        if count > 0, storage[count - 1] == UInt8(ascii: "\n") { count -= 1 }
    }

    /// Overwrites the line with zeros now, before the value goes.
    package mutating func wipe() {
        explicit_bzero(storage.baseAddress!, storage.count)
        count = 0
    }
}
