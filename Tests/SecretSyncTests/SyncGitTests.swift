import Foundation
import KeychainTestSupport
import SecretCrypto
import SecretStore
import Testing

@testable import SecretSync

/// The git transport against a real bare repository on a local path, with two clones standing
/// for two machines: what one publishes the other sees; a push after another machine's is
/// refused and goes through after a new round; the remote holds ciphertext only.
@Suite struct SyncGitTests {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("secretsync-git-\(UUID().uuidString)")

    func bareRemote() throws -> String {
        let remote = root.appendingPathComponent("remote.git")
        try FileManager.default.createDirectory(at: remote, withIntermediateDirectories: true)
        let made = try CommandResult.run(["git", "init", "--quiet", "--bare", remote.path], environment: ["PATH": "/usr/bin:/bin"], scratch: root, timeout: 30)
        #expect(made.status == 0, "\(made.errorOutput)")
        return remote.path
    }

    /// A bare remote and two clones of it, the laptop's synchronized.
    func laptopAndDesktop() throws -> (String, SyncGit, SyncGit) {
        let remote = try bareRemote()
        let laptop = SyncGit(directory: root.appendingPathComponent("laptop"), remote: remote)
        try laptop.synchronize()
        return (remote, laptop, SyncGit(directory: root.appendingPathComponent("desktop"), remote: remote))
    }

    @Test("two machines: publish, see, a refused push after the other's, a new round, nothing to publish")
    func twoMachines() throws {
        defer { try? FileManager.default.removeItem(at: root) }
        let (_, laptop, desktop) = try laptopAndDesktop()
        #expect(try laptop.files(in: "items").isEmpty)
        let mode = try FileManager.default.attributesOfItem(atPath: laptop.directory.path)[.posixPermissions] as? Int
        #expect(mode == 0o700)
        try laptop.write([1, 2, 3], to: "items/aa")
        #expect(try laptop.publish(message: "laptop") == .pushed)
        #expect(try laptop.publish(message: "again") == .unchanged)

        try desktop.synchronize()
        #expect(try desktop.files(in: "items") == ["aa": [1, 2, 3]])

        // Both change something; the laptop pushes first, so the desktop's push is refused.
        try laptop.write([4], to: "items/bb")
        try desktop.write([5], to: "items/cc")
        #expect(try laptop.publish(message: "laptop 2") == .pushed)
        #expect(try desktop.publish(message: "desktop") == .rejected)
        // A new round: the remote's files, without what the desktop had not published ...
        try desktop.synchronize()
        #expect(try desktop.files(in: "items") == ["aa": [1, 2, 3], "bb": [4]])
        // ... which it writes again, and now pushes; deletes travel too.
        try desktop.write([5], to: "items/cc")
        desktop.remove("items/aa")
        #expect(try desktop.publish(message: "desktop 2") == .pushed)
        try laptop.synchronize()
        #expect(try laptop.files(in: "items") == ["bb": [4], "cc": [5]])
    }

    @Test("the files changed since a commit, from git's trees: added, changed and removed; none for an unknown or rewritten commit")
    func changedFiles() throws {
        defer { try? FileManager.default.removeItem(at: root) }
        let (remote, laptop, desktop) = try laptopAndDesktop()
        #expect(try laptop.head() == nil)
        for name in ["aa", "bb", "cc"] { try laptop.write([1], to: "items/\(name)") }
        try laptop.write([1], to: "devices/dd")
        #expect(try laptop.publish(message: "first") == .pushed)
        let first = try #require(try laptop.head())
        #expect(try laptop.changedFiles(in: "items", since: first) == [])

        try laptop.write([2], to: "items/aa")
        laptop.remove("items/bb")
        try laptop.write([1], to: "items/ee")
        try laptop.write([2], to: "devices/dd")
        #expect(try laptop.publish(message: "second") == .pushed)
        try desktop.synchronize()
        let laptopHead = try laptop.head()
        #expect(try desktop.head() == laptopHead)
        #expect(try desktop.changedFiles(in: "items", since: first) == ["aa", "bb", "ee"])
        #expect(try desktop.files(in: "items", named: ["aa", "bb"]) == ["aa": [2]])

        // A commit the clone never had, and one the remote's rewritten history left behind.
        #expect(try desktop.changedFiles(in: "items", since: String(repeating: "0", count: 40)) == nil)
        #expect(try desktop.changedFiles(in: "items", since: "not a commit") == nil)
        try RewrittenHistory.push(to: remote, scratch: root)
        let before = try #require(try desktop.head())
        try desktop.synchronize()
        #expect(try desktop.head() != before)
        #expect(try desktop.changedFiles(in: "items", since: before) == nil)
    }

    @Test("a file larger than any item file can be is left unread and listed, so a remote cannot make secretd read a gigabyte")
    func oversizedFile() throws {
        let remote = try bareRemote()
        defer { try? FileManager.default.removeItem(at: root) }
        let clone = SyncGit(directory: root.appendingPathComponent("laptop"), remote: remote)
        try clone.synchronize()
        try clone.write([1, 2, 3], to: "items/small")
        try clone.write([UInt8](repeating: 0, count: SyncGit.largestFile + 1), to: "items/big")
        #expect(try clone.publish(message: "one too big") == .pushed)
        try clone.synchronize()
        #expect(try clone.files(in: "items") == ["small": [1, 2, 3]])
        #expect(try clone.oversizedFiles(in: "items") == ["big"])
        #expect(try clone.files(in: "items", named: ["big", "small"]) == ["small": [1, 2, 3]])
        #expect(try clone.oversizedFiles(in: "items", named: ["big"]) == ["big"])
    }

    @Test("what a round wrote is read back before it is published; the same bytes again publish nothing; a name git cannot take is refused")
    func writtenBeforePublish() throws {
        defer { try? FileManager.default.removeItem(at: root) }
        let (_, laptop, _) = try laptopAndDesktop()
        try laptop.write([1], to: "items/aa")
        try laptop.write([2], to: "keys/1/dd")
        #expect(try laptop.publish(message: "first") == .pushed)
        try laptop.synchronize()
        try laptop.write([3], to: "items/bb")
        laptop.remove("items/aa")
        #expect(try laptop.files(in: "items") == ["bb": [3]])
        #expect(try laptop.files(in: "items", named: ["aa", "bb", "cc"]) == ["bb": [3]])
        #expect(try laptop.files(in: "keys/1") == ["dd": [2]])
        #expect(try laptop.files(in: "keys/2").isEmpty)
        // A new round forgets what was not published.
        try laptop.synchronize()
        #expect(try laptop.files(in: "items") == ["aa": [1]])
        let head = try laptop.head()
        try laptop.write([1], to: "items/aa")
        #expect(try laptop.publish(message: "the same") == .unchanged)
        #expect(try laptop.head() == head)
        for bad in ["", "/items/aa", "items/../aa", "items/.aa", "items/a a", "items/a\nM 100644 inline x"] {
            #expect(throws: SyncError.self) { try laptop.write([1], to: bad) }
        }
    }

    @Test("loose objects past the clone's limit are packed at the next round; the files read the same")
    func looseObjectsPacked() throws {
        defer { try? FileManager.default.removeItem(at: root) }
        let remote = try bareRemote()
        let laptop = SyncGit(directory: root.appendingPathComponent("laptop"), remote: remote, looseLimitKiB: 1)
        let desktop = SyncGit(directory: root.appendingPathComponent("desktop"), remote: remote, looseLimitKiB: 1)
        /// The loose objects of `clone` (`git count-objects`).
        func looseCount(_ clone: SyncGit) throws -> Int {
            let counted = try CommandResult.run(["git", "-C", clone.directory.path, "count-objects"], environment: ["PATH": "/usr/bin:/bin"],
                                                scratch: root, timeout: 30)
            return Int(counted.text.split(separator: " ").first ?? "") ?? -1
        }
        try laptop.synchronize()
        for round in 0..<3 {
            for name in 0..<20 { try laptop.write(Array("round \(round) file \(name) ".utf8) + [UInt8](repeating: UInt8(round), count: 2000), to: "items/f\(name)") }
            #expect(try laptop.publish(message: "round \(round)") == .pushed)
        }
        #expect(try looseCount(laptop) > 0)
        try laptop.synchronize()
        try desktop.synchronize()
        #expect(try looseCount(laptop) == 0)
        #expect(try looseCount(desktop) == 0)
        for clone in [laptop, desktop] {
            let files = try clone.files(in: "items")
            #expect(files.count == 20 && files["f7"] == Array("round 2 file 7 ".utf8) + [UInt8](repeating: 2, count: 2000))
        }
    }

    @Test("a clone from before the working tree was given up: its files go, its history stays")
    func workingTreeOfBefore() throws {
        defer { try? FileManager.default.removeItem(at: root) }
        let (_, laptop, _) = try laptopAndDesktop()
        try laptop.write([1], to: "items/aa")
        #expect(try laptop.publish(message: "first") == .pushed)
        let left = laptop.directory.appendingPathComponent("items/aa")
        try FileManager.default.createDirectory(at: left.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data([9]).write(to: left)
        try laptop.synchronize()
        #expect(try FileManager.default.contentsOfDirectory(atPath: laptop.directory.path) == [".git"])
        #expect(try laptop.files(in: "items") == ["aa": [1]])
    }

    @Test("a damaged clone is made again from the remote; what was published stays")
    func damagedClone() throws {
        let remote = try bareRemote()
        defer { try? FileManager.default.removeItem(at: root) }
        let laptop = SyncGit(directory: root.appendingPathComponent("laptop"), remote: remote)
        try laptop.synchronize()
        try laptop.write([7, 7], to: "items/one")
        #expect(try laptop.publish(message: "one") == .pushed)
        // The clone's HEAD and index are garbage (a crash, a disk error, a person's edit).
        try Data("garbage".utf8).write(to: laptop.directory.appendingPathComponent(".git/HEAD"))
        try Data("garbage".utf8).write(to: laptop.directory.appendingPathComponent(".git/index"))
        try laptop.synchronize()
        #expect(try laptop.files(in: "items") == ["one": [7, 7]])
        try laptop.write([8], to: "items/two")
        #expect(try laptop.publish(message: "two") == .pushed)
    }

    @Test("a remote that is not there is a clear error, at once; a clone stays usable after it")
    func missingRemote() throws {
        defer { try? FileManager.default.removeItem(at: root) }
        let missing = root.appendingPathComponent("nothing.git").path
        let clone = SyncGit(directory: root.appendingPathComponent("clone"), remote: missing)
        let started = Date()
        do {
            try clone.synchronize()
            Issue.record("synchronize with no remote succeeded")
        } catch {
            #expect("\(error)".contains("git fetch failed"), "\(error)")
            #expect("\(error)".contains(missing) || "\(error)".contains("does not appear to be a git repository"), "\(error)")
        }
        #expect(Date().timeIntervalSince(started) < 10)
        // The remote appears: the same clone works.
        let remote = try bareRemote()
        let fixed = SyncGit(directory: clone.directory, remote: remote)
        try fixed.synchronize()
        try fixed.write([9], to: "items/dd")
        #expect(try fixed.publish(message: "first") == .pushed)
    }

    @Test("the remote's objects hold no label, attribute value or secret of a synced item")
    func onlyCiphertext() throws {
        let remote = try bareRemote()
        defer { try? FileManager.default.removeItem(at: root) }
        let vault = SyncIDs.random()
        let key = Gcrypt.randomKey()
        let clone = SyncGit(directory: root.appendingPathComponent("clone"), remote: remote)
        try clone.synchronize()
        for index in 0..<20 {
            let item = SyncItem(
                contents: ItemContents(
                    label: "Label-\(index)-visible", attributes: ["service": "svc-\(index)-visible", "account": "acct-visible"],
                    secret: SecureBytes(Array("secret-\(index)-visible".utf8)), contentType: "text/plain"),
                created: 1, modified: 2)
            let header = SyncHeader(vault: vault, item: SyncIDs.random(), timestamp: SyncTimestamp(milliseconds: UInt64(index)),
                                    device: SyncIDs.random(), deleted: false, keyGeneration: 1)
            let record = try SyncRecord.seal(item, header: header, key: key)
            try clone.write(record.bytes, to: "items/" + header.fileName)
        }
        #expect(try clone.publish(message: "twenty items") == .pushed)
        // Every object of the bare repository, uncompressed by git itself.
        let objects = try CommandResult.run(
            ["sh", "-c", "git -C \"$1\" cat-file --batch-all-objects --batch", "sh", remote], environment: ["PATH": "/usr/bin:/bin"],
            scratch: root, timeout: 30)
        #expect(objects.status == 0 && objects.text.contains("tree"), "\(objects.errorOutput)")
        #expect(!objects.text.contains("visible"))
        #expect(objects.text.contains("secretd@localhost"))  // the commits name no person
    }
}
