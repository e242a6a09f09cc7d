public import Foundation
import Glibc

/// Programs the tests write and then run (scripted pinentries, askpass helpers, copies of
/// secretctl), written through a close-on-exec descriptor. Foundation's `write(to:)` leaves its
/// descriptor open across a fork, so a child that another test forks meanwhile keeps the file
/// open for writing, and running it fails with "Text file busy" (ETXTBSY) until that child execs.
public enum ExecutableFile {
    /// Writes `bytes` to `path` as a new program (mode 0755), replacing what was there.
    public static func write(_ bytes: [UInt8], to path: String) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o755)
        guard descriptor >= 0 else { throw HarnessError("cannot create \(path): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
        guard written == bytes.count, fchmod(descriptor, 0o755) == 0 else { throw HarnessError("cannot write \(path)") }
    }

    /// Writes the script `text` to `url` as a program.
    public static func write(script text: String, to url: URL) throws {
        try write(Array(text.utf8), to: url.path)
    }

    /// Copies the program at `source` to `destination`.
    public static func copy(_ source: String, to destination: String) throws {
        guard let bytes = FileManager.default.contents(atPath: source) else { throw HarnessError("cannot read \(source)") }
        try write(Array(bytes), to: destination)
    }
}
