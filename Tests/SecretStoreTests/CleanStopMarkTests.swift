import Foundation
import Glibc
import Testing

@testable import SecretCrypto
@testable import SecretStore

/// The quick check a clean stop makes so that the next start need not (``CleanStopMark``):
/// skipped only for a file nothing has written since it passed.
@Suite struct CleanStopMarkTests {
    let password = SecureBytes(Array("correct horse".utf8))

    /// A store of `count` items, open.
    func filledStore(_ count: Int = 50) throws -> Store {
        let (store, _) = try makeStore()
        let (login, key) = try store.createCollection(name: "login", label: "Login", password: password, parameters: .testing)
        for index in 0..<count {
            _ = try store.createItem(
                in: login, keys: key,
                contents: ItemContents(label: "\(index)", attributes: ["i": "\(index)"], secret: SecureBytes(Array("v\(index)".utf8)), contentType: "text/plain"))
        }
        return store
    }

    /// A store of 50 items, closed cleanly; its directory and database path.
    func closedStore() throws -> (directory: URL, file: String) {
        let store = try filledStore()
        #expect(store.close() == nil)
        return (store.databaseURL.deletingLastPathComponent(), store.databaseURL.path)
    }

    /// Flips a byte every 97 past the first page of `file`, in place (same inode and size).
    func garble(_ file: String) throws {
        let handle = try #require(FileHandle(forUpdatingAtPath: file))
        let size = try handle.seekToEnd()
        for offset in stride(from: UInt64(4096), to: size, by: 97) {
            try handle.seek(toOffset: offset)
            try handle.write(contentsOf: Data([0xA5]))
        }
        try handle.close()
    }

    @Test("a clean stop checks the file and marks it (0600); the next start skips its check, once, and reads every item")
    func skippedOnce() throws {
        let (directory, file) = try closedStore()
        let mark = CleanStopMark.path(beside: URL(fileURLWithPath: file))
        let attributes = try FileManager.default.attributesOfItem(atPath: mark)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        #expect(!FileManager.default.fileExists(atPath: file + "-wal"))

        let store = try Store(directory: directory)
        #expect(!store.checkedAtStart)
        #expect(!FileManager.default.fileExists(atPath: mark), "the mark is used once")
        let login = try #require(try store.collection(named: "login"))
        let key = try store.unlock(login, password: password)
        #expect(try store.search([:]).count == 50)
        for item in try store.search([:]) { _ = try store.readItem(item, in: login, keys: key) }
        store.close()
        #expect(FileManager.default.fileExists(atPath: mark))
        let again = try Store(directory: directory)
        #expect(!again.checkedAtStart)
        again.close()
    }

    @Test("damage written in place right after the clean stop, even with the old modification time put back, is found")
    func damageAfterTheStop() throws {
        let (directory, file) = try closedStore()
        var before = stat()
        stat(file, &before)
        try garble(file)
        let times = [before.st_atim, before.st_mtim]
        #expect(times.withUnsafeBufferPointer { utimensat(AT_FDCWD, file, $0.baseAddress, 0) } == 0)
        var after = stat()
        stat(file, &after)
        #expect(after.st_size == before.st_size && after.st_ino == before.st_ino)

        #expect(!CleanStopMark.vouches(for: URL(fileURLWithPath: file)), "the mark must not vouch for the written file")
        // Refused as damaged: by the check's finding, or by SQLite's own error when the check
        // cannot even run, as DatabaseRefusal reads both.
        let error = #expect(throws: StoreError.self) { try Store(directory: directory) }
        switch error {
        case .corrupted?, .database?: break
        default: Issue.record("a damaged file was not refused as damaged: \(String(describing: error))")
        }
    }

    @Test("a write-ahead log (a crash), a file put in its place, a garbled or stale mark: the start checks")
    func checkedWhenNotVouched() throws {
        let url = { (file: String) in URL(fileURLWithPath: file) }

        var (directory, file) = try closedStore()
        try Data(repeating: 1, count: 100).write(to: url(file + "-wal"))
        #expect(!CleanStopMark.vouches(for: url(file)))
        try FileManager.default.removeItem(atPath: file + "-wal")

        (directory, file) = try closedStore()
        let copy = file + ".copy"
        try FileManager.default.copyItem(atPath: file, toPath: copy)
        #expect(rename(copy, file) == 0)
        let store = try Store(directory: directory)
        #expect(store.checkedAtStart)
        store.close()

        (directory, file) = try closedStore()
        try Data("0 0 0\n".utf8).write(to: url(CleanStopMark.path(beside: url(file))))
        #expect(!CleanStopMark.vouches(for: url(file)))

        (directory, file) = try closedStore()
        #expect(!CleanStopMark.vouches(for: url(file), now: time(nil) + CleanStopMark.maximumAge + 60))

        (directory, file) = try closedStore()
        #expect(CleanStopMark.vouches(for: url(file), now: time(nil) + CleanStopMark.maximumAge - 60))
    }

    /// A mark written at a second's turn on a file system with fine-grained change times
    /// (Linux 6.13 on) is stamped in the new second while `time(nil)` still reads the old
    /// one; the mark then looked as if it came from the future and vouched for nothing (a
    /// failure of `skippedOnce` seen in CI). Files are written without a pause across two
    /// turns of the second (one to two seconds); with `time(nil)` this fails on such a kernel.
    @Test("the clock the mark's age is read against is never behind a file just written")
    func clockNotBehindFileTimes() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("clean-stop-clock-\(UUID().uuidString)").path
        defer { unlink(path) }
        let start = CleanStopMark.currentSeconds()
        var ahead = 0
        var writes = 0
        while CleanStopMark.currentSeconds() < start + 2 {
            let file = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            try #require(file >= 0)
            _ = write(file, "x", 1)
            var status = stat()
            fstat(file, &status)
            close(file)
            if CleanStopMark.currentSeconds() < status.st_ctim.tv_sec { ahead += 1 }
            writes += 1
        }
        #expect(writes > 100)
        #expect(ahead == 0)
    }

    @Test("a store whose file fails the check as it closes says so and leaves no mark")
    func failingAtTheStop() throws {
        let store = try filledStore(200)
        try store.database.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        // Damage the file under the open connection: pages the check reads from the file.
        try garble(store.databaseURL.path)
        try store.database.execute("PRAGMA shrink_memory")  // the connection's cached pages let go
        let finding = store.close()
        #expect(finding != nil)
        #expect(!FileManager.default.fileExists(atPath: CleanStopMark.path(beside: store.databaseURL)))
    }
}
