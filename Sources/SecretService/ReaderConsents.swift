import KeychainCore
import Glibc
import CProcess  // struct stat, as the modules that include <sys/stat.h> first declare it
import SecretCrypto
import SecretStore

/// Consent for new readers (secretd(1), CONSENT): in an access group whose `consent` is
/// `new-readers`, a member that the person has not allowed sees the group's items locked, and
/// unlocking them asks the person (deny, allow once, always allow). "Always" is remembered in
/// the database per identity and group, bound to the SHA-256 of the executable that was
/// running, so a replaced or changed program is asked about again.
///
/// Follows the keyring: a restore brings back the consents of the backup.
final class ReaderConsents {
    private let keyring: Keyring
    /// secretd.conf's `consent`, for the default group and every group that sets none.
    private let defaultMode: ReaderConsentMode
    /// The remembered consents, by identity and group.
    private var remembered: [Key: Store.ReaderConsent] = [:]
    /// Executables already hashed, by what identifies their file's content on disk.
    private var digests: [FileVersion: [UInt8]] = [:]

    private struct Key: Hashable {
        var identity: String
        var group: String
    }

    /// A file's device, inode, size, and modification and change times: a write to it, or
    /// another file in its place, changes at least one.
    private struct FileVersion: Hashable {
        var device: UInt64
        var inode: UInt64
        var size: Int64
        var modified: Int64
        var changed: Int64

        init(_ status: stat) {
            device = UInt64(status.st_dev)
            inode = UInt64(status.st_ino)
            size = Int64(status.st_size)
            modified = Int64(status.st_mtim.tv_sec) * 1_000_000_000 + Int64(status.st_mtim.tv_nsec)
            changed = Int64(status.st_ctim.tv_sec) * 1_000_000_000 + Int64(status.st_ctim.tv_nsec)
        }
    }

    /// Consents over `keyring`'s store, with secretd.conf's `consent` as `defaultMode`.
    init(keyring: Keyring, defaultMode: ReaderConsentMode) {
        self.keyring = keyring
        self.defaultMode = defaultMode
        reload()
        keyring.subscribe { [weak self] event in
            if case .restored = event { self?.reload() }
        }
    }

    /// Whether `group` asks before its members' first reads under `policy`.
    func mode(of group: String, in policy: AccessPolicy) -> ReaderConsentMode {
        policy.group(group)?.consent ?? defaultMode
    }

    /// Whether some group asks (so `secretctl consent` has something to say).
    func isInForce(in policy: AccessPolicy) -> Bool {
        defaultMode == .newReaders || policy.groups.contains { $0.consent == .newReaders }
    }

    /// Whether `caller`, allowed into `group` by the policy, must still be allowed by the person
    /// before it reads: the group asks, and no remembered consent matches the caller's
    /// executable, and the person did not allow it once.
    func mustAsk(_ caller: Caller, about group: String, in policy: AccessPolicy) -> Bool {
        guard mode(of: group, in: policy) == .newReaders, !caller.allowedOnce.contains(group) else { return false }
        guard let consent = remembered[Key(identity: caller.identity.description, group: group)] else { return true }
        guard let bound = consent.executableDigest else { return false }
        return digest(of: caller) != bound
    }

    /// Remembers that the person always allows `caller` to read `group`, bound to the
    /// executable it runs now.
    func rememberAlways(_ caller: Caller, reading group: String) throws(StoreError) {
        guard let digest = digest(of: caller) else {
            Log.warning("cannot read the executable of process \(caller.pid) (\(caller.identity)); it is allowed once only")
            caller.allowedOnce.insert(group)
            return
        }
        try save(Store.ReaderConsent(identity: caller.identity.description, group: group, executableDigest: digest, granted: now()))
    }

    /// Allows `identity` to read `group` without asking (`secretctl consent allow`): bound to
    /// the executable's content now for an `exe:` identity, to any executable for the others.
    func allow(_ identity: CallerIdentity, reading group: String) -> Result<Void, SecretServiceError> {
        var digest: [UInt8]?
        if identity.kind == .exe {
            let descriptor = open(identity.name, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { return .failure(.invalidArgs("cannot read \(identity.name): \(String(cString: strerror(errno)))")) }
            defer { close(descriptor) }
            digest = self.digest(ofOpenFile: descriptor)
            guard digest != nil else { return .failure(.failed("cannot read \(identity.name) to bind the consent to it")) }
        }
        do throws(StoreError) {
            try save(Store.ReaderConsent(identity: identity.description, group: group, executableDigest: digest, granted: now()))
            return .success(())
        } catch {
            return .failure(SecretServiceError(storeFailure: error))
        }
    }

    /// Forgets the consent of `identity` for `group`; false when there was none.
    func revoke(_ identity: String, reading group: String) -> Result<Bool, SecretServiceError> {
        do throws(StoreError) {
            let removed = try keyring.store.removeReaderConsent(identity: identity, group: group)
            remembered[Key(identity: identity, group: group)] = nil
            if removed { Log.info("forgot the consent for \(identity) to read the access group \(group)") }
            return .success(removed)
        } catch {
            return .failure(SecretServiceError(storeFailure: error))
        }
    }

    /// Every remembered consent, by identity and group.
    var all: [Store.ReaderConsent] {
        remembered.values.sorted { ($0.identity, $0.group) < ($1.identity, $1.group) }
    }

    /// Hashes `caller`'s executable off the loop (`offLoop`) unless that version of the file
    /// was hashed before, then runs `done` on the loop: a program of hundreds of megabytes
    /// delays only its own first call.
    func prepareDigest(of caller: Caller, offLoop: OffLoop, then done: @escaping () -> Void) {
        let descriptor = open("/proc/\(caller.pid)/exe", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0, let (version, known) = cachedDigest(ofOpenFile: descriptor) else {
            if descriptor >= 0 { close(descriptor) }
            return done()
        }
        if let known {
            close(descriptor)
            caller.executableDigest = known
            return done()
        }
        offLoop.run(named: "secretd-digest", {
            defer { close(descriptor) }
            return Gcrypt.sha256(readingFile: descriptor)
        }, done: { [weak self] digest in
            if let digest {
                self?.digests[version] = digest
                caller.executableDigest = digest
            }
            done()
        })
    }

    // MARK: - Private

    private func save(_ consent: Store.ReaderConsent) throws(StoreError) {
        try keyring.store.saveReaderConsent(consent)
        remembered[Key(identity: consent.identity, group: consent.group)] = consent
        Log.info("\(consent.identity) may read the access group \(consent.group) from now on without asking")
    }

    private func reload() {
        do throws(StoreError) {
            remembered = Dictionary(
                try keyring.store.readerConsents().map { (Key(identity: $0.identity, group: $0.group), $0) },
                uniquingKeysWith: { $1 })
        } catch {
            Log.error("cannot read the remembered consents: \(error); every reader of a group that asks is asked")
            remembered = [:]
        }
    }

    /// SHA-256 of the executable `caller` runs (through /proc, so the running file even when
    /// it was replaced or deleted on disk), computed once per file version.
    private func digest(of caller: Caller) -> [UInt8]? {
        if let known = caller.executableDigest { return known }
        let descriptor = open("/proc/\(caller.pid)/exe", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        caller.executableDigest = digest(ofOpenFile: descriptor)
        return caller.executableDigest
    }

    private func digest(ofOpenFile descriptor: Int32) -> [UInt8]? {
        guard let (version, known) = cachedDigest(ofOpenFile: descriptor) else { return nil }
        if let known { return known }
        guard let digest = Gcrypt.sha256(readingFile: descriptor) else { return nil }
        digests[version] = digest
        return digest
    }

    /// The version of the regular file open at `descriptor`, with its digest when that
    /// version was hashed before; nil for anything but a regular file.
    private func cachedDigest(ofOpenFile descriptor: Int32) -> (FileVersion, [UInt8]?)? {
        var status = stat()
        guard fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else { return nil }
        let version = FileVersion(status)
        return (version, digests[version])
    }

    private func now() -> Int64 { Int64(time(nil)) }
}
