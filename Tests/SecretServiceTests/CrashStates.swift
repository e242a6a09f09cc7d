import KeychainTestSupport

/// The data directory as a power cut can leave it, replayed from an ``IORecording``.
///
/// Each file keeps what its last fsync or fdatasync made durable and the operations since
/// then, which the cut may have kept or lost, each independently: a write whole, not at all, or
/// torn (some of its 512-byte sectors written, the others old or, as a drive that tears
/// sectors leaves them, garbage); a truncation made or not. Names (created, removed and
/// renamed files) are durable once the directory is synced, as POSIX has it; until then each
/// name points at its file from before or from after. Files of other names than these (the
/// `-shm` index, which the shim leaves out) do not exist after the cut.
struct CrashStates {
    /// One file.
    final class File {
        /// Its bytes as of its last sync.
        var durable: [UInt8] = []
        /// Its bytes in the page cache (what reads see).
        var current: [UInt8] = []
        /// What changed it since its last sync, in order.
        var pending: [Change] = []
    }

    /// An operation on a file's bytes.
    enum Change {
        case write(offset: Int, bytes: [UInt8])
        case truncate(Int)
    }

    /// How much of what was not synced a state keeps.
    enum Survival {
        /// Nothing: the state a cut right after the last syncs leaves.
        case nothing
        /// Everything: the files as the page cache held them (what a killed process leaves).
        case everything
        /// A random subset, with torn writes.
        case some
    }

    /// The directory's names as they are now, and as of its last sync.
    private var names: [String: File] = [:]
    private var durableNames: [String: File] = [:]

    /// The sector a torn write is made of.
    static let sectorSize = 512

    /// Applies the next file operation of the recording.
    mutating func apply(_ event: IORecording.Event) {
        switch event {
        case .create(let name):
            names[name] = File()
        case .write(let name, let offset, let bytes):
            let file = file(name)
            Self.write(bytes, at: offset, into: &file.current)
            file.pending.append(.write(offset: offset, bytes: bytes))
        case .truncate(let name, let size):
            let file = file(name)
            Self.truncate(&file.current, to: size)
            file.pending.append(.truncate(size))
        case .sync("."):
            durableNames = names
        case .sync(let name):
            let file = file(name)
            file.durable = file.current
            file.pending = []
        case .unlink(let name):
            names[name] = nil
        case .rename(let from, let to):
            names[to] = names[from]
            names[from] = nil
        case .found(let name, let bytes):
            // What the next start finds, taken as on disk (the files a kill leaves are those
            // of the page cache; the next start's first commit syncs the log).
            let file = File()
            file.current = bytes
            file.durable = bytes
            names[name] = file
            durableNames[name] = file
        case .began, .acknowledged, .failed, .makeDirectory:
            break  // a directory holds none of the database's files
        }
    }

    /// The file now called `name`; one the recording never created (it existed before the
    /// recording started, which never happens here) starts empty.
    private mutating func file(_ name: String) -> File {
        if let file = names[name] { return file }
        let file = File()
        names[name] = file
        return file
    }

    /// The files a cut now leaves, by name, keeping `survival` of what was not synced.
    func state(keeping survival: Survival, random: inout SeededRandom) -> [String: [UInt8]] {
        var result: [String: [UInt8]] = [:]
        for name in Set(names.keys).union(durableNames.keys).sorted() {
            let before = durableNames[name], after = names[name]
            let chosen: File?
            switch survival {
            case .nothing: chosen = before
            case .everything: chosen = after
            case .some: chosen = before === after || Bool.random(using: &random) ? after : before
            }
            guard let file = chosen else { continue }
            result[name] = contents(of: file, keeping: survival, random: &random)
        }
        return result
    }

    /// The bytes of `file` after the cut.
    private func contents(of file: File, keeping survival: Survival, random: inout SeededRandom) -> [UInt8] {
        switch survival {
        case .nothing: return file.durable
        case .everything: return file.current
        case .some:
            var bytes = file.durable
            for change in file.pending where Bool.random(using: &random) {
                switch change {
                case .truncate(let size): Self.truncate(&bytes, to: size)
                case .write(let offset, let written):
                    guard Int.random(in: 0..<3, using: &random) == 0 else {
                        Self.write(written, at: offset, into: &bytes)
                        continue
                    }
                    // Torn: each sector written or not; with a drive that tears sectors, the
                    // ones not written hold garbage.
                    let garbage = Int.random(in: 0..<4, using: &random) == 0
                    var start = offset
                    while start < offset + written.count {
                        let end = min((start / Self.sectorSize + 1) * Self.sectorSize, offset + written.count)
                        if Bool.random(using: &random) {
                            Self.write(Array(written[(start - offset)..<(end - offset)]), at: start, into: &bytes)
                        } else if garbage {
                            Self.write((start..<end).map { _ in UInt8.random(in: 0...255, using: &random) }, at: start, into: &bytes)
                        }
                        start = end
                    }
                }
            }
            return bytes
        }
    }

    /// Writes `bytes` at `offset`, extending `file` with zeros first when it is shorter.
    static func write(_ bytes: [UInt8], at offset: Int, into file: inout [UInt8]) {
        if file.count < offset + bytes.count { file.append(contentsOf: repeatElement(0, count: offset + bytes.count - file.count)) }
        file.replaceSubrange(offset..<offset + bytes.count, with: bytes)
    }

    /// Cuts `file` to `size` bytes, or extends it with zeros.
    static func truncate(_ file: inout [UInt8], to size: Int) {
        if file.count > size { file.removeSubrange(size...) } else { file.append(contentsOf: repeatElement(0, count: size - file.count)) }
    }
}
