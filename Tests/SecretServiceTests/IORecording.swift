import Foundation
import Testing

/// What `scripts/power-cut/io-record.c` recorded of secretd's file operations in its data
/// directory, with the lines the writers (`scripts/dbus-clients/power-cut-writer.py`) appended
/// to the same log, in the order they happened (see the shim's header for the format).
struct IORecording {
    /// One line of the log (with its data, for a write).
    enum Event {
        /// The file was created.
        case create(String)
        /// `bytes` were written at `offset`.
        case write(String, offset: Int, bytes: [UInt8])
        /// The file was cut or extended to `size`.
        case truncate(String, size: Int)
        /// fsync or fdatasync of the file (`.`: the directory) returned.
        case sync(String)
        /// The file was removed.
        case unlink(String)
        /// The file `from` was renamed `to`.
        case rename(from: String, to: String)
        /// A directory was made.
        case makeDirectory(String)
        /// A writer is about to call secretd (`token` `-`: a delete).
        case began(key: String, token: String)
        /// secretd replied to it: the write is acknowledged.
        case acknowledged(key: String, token: String)
        /// The call failed: it may have been written or not.
        case failed(key: String, token: String)
        /// The harness found the file with these bytes after a kill, before the next start
        /// (``PowerCutTests/recordFiles(in:to:)``): no cut is made before it.
        case found(String, bytes: [UInt8])

        /// Whether it changes files (a cut before it can leave a state no other cut leaves).
        var isFileOperation: Bool {
            switch self {
            case .began, .acknowledged, .failed, .found: return false
            default: return true
            }
        }
    }

    /// Every event, in order.
    let events: [Event]

    /// Reads the log at `url`.
    init(contentsOf url: URL) throws {
        events = try Self.parse([UInt8](try Data(contentsOf: url))).events
    }

    /// Cuts the log at `url` after its last whole record. A process killed while it appended
    /// its last record (a write to a file stops at a page boundary when SIGKILL comes) leaves
    /// it cut short, and what others append after it would be read as its bytes.
    static func dropTornRecord(atEndOf url: URL) throws {
        let data = [UInt8](try Data(contentsOf: url))
        let whole = try parse(data).wholeLength
        if whole < data.count { #expect(truncate(url.path, off_t(whole)) == 0) }
    }

    /// The events of `data`, and the length of its whole records (a torn last one ends them).
    private static func parse(_ data: [UInt8]) throws -> (events: [Event], wholeLength: Int) {
        var events: [Event] = []
        var index = 0
        while index < data.count {
            let start = index
            guard let end = data[index...].firstIndex(of: UInt8(ascii: "\n")) else { return (events, start) }  // a torn last line
            let fields = String(decoding: data[index..<end], as: UTF8.self).split(separator: " ").map(String.init)
            index = end + 1
            guard let kind = fields.first, fields.count >= 2 else { throw RecordingError.malformed(fields.joined(separator: " ")) }
            switch (kind, fields.count) {
            case ("C", 2): events.append(.create(fields[1]))
            case ("W", 4):
                guard let offset = Int(fields[2]), let count = Int(fields[3]) else { throw RecordingError.malformed(fields.joined(separator: " ")) }
                guard index + count <= data.count else { return (events, start) }  // a torn last write
                events.append(.write(fields[1], offset: offset, bytes: Array(data[index..<index + count])))
                index += count
            case ("K", 3):
                guard let count = Int(fields[2]) else { throw RecordingError.malformed(fields.joined(separator: " ")) }
                guard index + count <= data.count else { return (events, start) }
                events.append(.found(fields[1], bytes: Array(data[index..<index + count])))
                index += count
            case ("T", 3):
                guard let size = Int(fields[2]) else { throw RecordingError.malformed(fields.joined(separator: " ")) }
                events.append(.truncate(fields[1], size: size))
            case ("S", 2): events.append(.sync(fields[1]))
            case ("U", 2): events.append(.unlink(fields[1]))
            case ("R", 3): events.append(.rename(from: fields[1], to: fields[2]))
            case ("M", 2): events.append(.makeDirectory(fields[1]))
            case ("B", 4...): events.append(.began(key: fields[2], token: fields[3]))
            case ("A", 4...): events.append(.acknowledged(key: fields[2], token: fields[3]))
            case ("F", 4...): events.append(.failed(key: fields[2], token: fields[3]))
            default: throw RecordingError.malformed(fields.joined(separator: " "))
            }
        }
        return (events, data.count)
    }

    /// A line the parser does not know.
    enum RecordingError: Error {
        case malformed(String)
    }
}
