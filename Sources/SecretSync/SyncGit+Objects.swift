import FoundationEssentials
import Glibc
import Synchronization

/// Reading the branch's files from git's objects, and the stream that writes a commit.
extension SyncGit {
    /// The files of the branch directly in `folder` (not the changes written since), by name;
    /// only those `named` when given. Named files of a folder not yet listed are looked up one
    /// by one (`cat-file --batch-check`), so a round that reads a few files costs the same at
    /// any number of files; otherwise the folder's top-level folder is listed once a round.
    func committedFiles(in folder: String, named names: Set<String>?) throws(SyncError) -> [String: Blob] {
        guard let tip = try head() else { return [:] }
        let top = folder == "." ? "." : String(folder.prefix { $0 != "/" })
        let names = names?.filter { Self.isPlainPath($0) && !$0.contains("/") }
        if let names, !state.withLock({ $0.listedTops.contains(top) }) {
            return try lookUp(names, in: folder, at: tip)
        }
        try list(top, at: tip)
        let listed = state.withLock { $0.listed[folder] ?? [:] }
        guard let names else { return listed }
        return listed.filter { names.contains($0.key) }
    }

    /// Lists the files under `top` (recursively; `.`: only the files at the top) of `commit`.
    private func list(_ top: String, at commit: String) throws(SyncError) {
        guard !state.withLock({ $0.listedTops.contains(top) }) else { return }
        let arguments = top == "." ? ["ls-tree", "-z", "-l", commit] : ["ls-tree", "-r", "-z", "-l", commit, "--", top]
        var listed: [String: [String: Blob]] = [:]
        // Each entry: "<mode> SP <type> SP <object> SP+ <size> TAB <path>".
        for entry in try gitBytes(arguments).split(separator: 0) {
            guard let tab = entry.firstIndex(of: UInt8(ascii: "\t")) else { continue }
            let fields = entry[..<tab].split(separator: UInt8(ascii: " "))
            guard fields.count == 4, fields[1].elementsEqual("blob".utf8), let size = Int(String(decoding: fields[3], as: UTF8.self))
            else { continue }
            let path = String(decoding: entry[(tab + 1)...], as: UTF8.self)
            let slash = path.lastIndex(of: "/")
            let folder = slash.map { String(path[..<$0]) } ?? "."
            let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
            listed[folder, default: [:]][name] = Blob(id: String(decoding: fields[2], as: UTF8.self), size: size)
        }
        state.withLock { state in
            state.listed.merge(listed) { $1 }
            state.listedTops.insert(top)
        }
    }

    /// The files `names` of `folder` in `commit` that exist, by name.
    private func lookUp(_ names: Set<String>, in folder: String, at commit: String) throws(SyncError) -> [String: Blob] {
        guard !names.isEmpty else { return [:] }
        let ordered = names.sorted()
        let prefix = folder == "." ? "" : folder + "/"
        let input = ordered.map { "\(commit):\(prefix)\($0)\n" }.joined()
        // One line a name, in order: "<object> <type> <size>", or "<name> missing".
        let lines = try gitBytes(["cat-file", "--batch-check"], input: Array(input.utf8)).split(separator: UInt8(ascii: "\n"))
        guard lines.count == ordered.count else { throw .transport("git cat-file gave \(lines.count) answers for \(ordered.count) files in \(directory.path)") }
        var found: [String: Blob] = [:]
        for (name, line) in zip(ordered, lines) {
            let fields = line.split(separator: UInt8(ascii: " "))
            guard fields.count == 3, fields[1].elementsEqual("blob".utf8), let size = Int(String(decoding: fields[2], as: UTF8.self)) else { continue }
            found[name] = Blob(id: String(decoding: fields[0], as: UTF8.self), size: size)
        }
        return found
    }

    /// The contents of the objects `ids`, by id, in one `git cat-file --batch`.
    func readBlobs(_ ids: Set<String>) throws(SyncError) -> [String: [UInt8]] {
        guard !ids.isEmpty else { return [:] }
        let input = ids.map { $0 + "\n" }.joined()
        let output = try gitBytes(["cat-file", "--batch"], input: Array(input.utf8))
        // Each object: "<object> <type> <size>\n", its bytes, "\n"; a missing one: "<object> missing\n".
        var found: [String: [UInt8]] = [:]
        var index = output.startIndex
        while index < output.endIndex {
            guard let newline = output[index...].firstIndex(of: UInt8(ascii: "\n")) else { break }
            let fields = output[index..<newline].split(separator: UInt8(ascii: " "))
            index = newline + 1
            guard fields.count == 3, let size = Int(String(decoding: fields[2], as: UTF8.self)), size >= 0,
                size <= output.endIndex - index
            else { continue }
            found[String(decoding: fields[0], as: UTF8.self)] = Array(output[index..<(index + size)])
            index += size + 1
        }
        return found
    }

    /// The `git fast-import` stream of one commit on `branch`: `changes` made to `parent` (nil:
    /// a first commit, of `changes` alone), by secretd, with `message`, at `time` (seconds).
    static func fastImportStream(branch: String, parent: String?, message: String, changes: [String: Change], time: Int) -> [UInt8] {
        var stream: [UInt8] = []
        stream.reserveCapacity(changes.values.reduce(4096) { total, change in
            if case .write(let bytes) = change { total + bytes.count + 128 } else { total + 128 }
        })
        func append(_ text: String) { stream += Array(text.utf8) }
        let messageBytes = Array(message.utf8)
        append("commit refs/heads/\(branch)\ncommitter secretd <secretd@localhost> \(time) +0000\ndata \(messageBytes.count)\n")
        stream += messageBytes
        append("\n")
        if let parent { append("from \(parent)\n") }
        for (path, change) in changes.sorted(by: { $0.key < $1.key }) {
            switch change {
            case .write(let bytes):
                append("M 100644 inline \(path)\ndata \(bytes.count)\n")
                stream += bytes
                append("\n")
            case .remove:
                append("D \(path)\n")
            }
        }
        append("\n")
        return stream
    }
}
