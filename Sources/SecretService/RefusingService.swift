internal import CProcess  // declares `struct stat` as Glibc does; the compiler may take it from here
import FoundationEssentials
import Glibc
import KeychainCore
public import SecretStore
import DBusValues

/// What secretd serves when its database cannot be used (``DatabaseRefusal``: damaged, or
/// written by a newer secretd): it owns the bus name, so that no other provider hands clients
/// an empty keyring in its place, and answers every call at once with the refusal
/// (`io.github.secretd.Error.UnusableDatabase`, its message naming the file and what to do)
/// instead of exiting, which would leave clients with the bus's own activation errors and a
/// restart loop. It touches no file; once the database file is moved aside or replaced it
/// exits, so that the next client starts a secretd that opens what is there now.
public final class RefusingService: BusHandler {
    private let refusal: DatabaseRefusal
    private let error: SecretServiceError
    /// The file as it was found: what tells that it was moved aside or replaced.
    private let fileIdentity: [Int]?

    private init(_ refusal: DatabaseRefusal) {
        self.refusal = refusal
        error = .unusableDatabase(refusal.description)
        fileIdentity = Self.identity(of: refusal.path)
    }

    /// Serves the refusal on `busName` until SIGTERM or SIGINT, or until the database file
    /// changes; `refused` runs (and should exit) when another provider keeps the name.
    public static func run(
        _ refusal: DatabaseRefusal, busName: String, replace: Bool, refused: @escaping (String) -> Void
    ) throws(SecretServiceError) {
        let service = RefusingService(refusal)
        let server = try BusServer(handler: service, quota: Limits.callQuota(openFiles: OpenFileLimit.current))
        server.ownName(busName, replace: replace, acquired: {
            Log.info("serving \(busName), answering every call with the refusal")
        }, lost: { name in refused("\(name) is owned by another provider") })
        service.watchFile()
        BusServer.runMainLoop()
    }

    /// The device, inode, size and modification time of `path`, or nil when it is gone.
    private static func identity(of path: String) -> [Int]? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        return [Int(status.st_dev), Int(status.st_ino), Int(status.st_size), status.st_mtim.tv_sec, status.st_mtim.tv_nsec]
    }

    /// Checks every two seconds whether the file was moved aside or replaced.
    private func watchFile() {
        MainLoop.after(seconds: 2) { [weak self] in
            guard let self else { return }
            if Self.identity(of: self.refusal.path) != self.fileIdentity {
                Log.info("\(self.refusal.path) was moved or replaced; exiting, so that the next client starts secretd anew")
                MainLoop.quit()
            } else {
                self.watchFile()
            }
        }
    }

    // MARK: - BusHandler: every call refused before it is routed

    func identify(_ sender: String, then: @escaping (SecretServiceError?) -> Void) -> Bool {
        let error = self.error
        MainLoop.after(seconds: 0) { then(error) }
        return true
    }

    func handle(_ call: MethodCall) -> Result<DBusValue, SecretServiceError> { .failure(error) }

    func handle(_ call: MethodCall, replyLater reply: @escaping (Result<DBusValue, SecretServiceError>) -> Void) {
        reply(.failure(error))
    }

    func property(_ name: String, interface: String, path: String, sender: String) -> Result<DBusValue, SecretServiceError> {
        .failure(error)
    }

    func properties(_ names: [String], interface: String, path: String, sender: String)
        -> Result<[(name: String, value: DBusValue)], SecretServiceError>
    {
        .failure(error)
    }

    func setProperty(_ name: String, interface: String, path: String, value: DBusValue, sender: String) -> SecretServiceError? {
        error
    }

    func children(of path: String, sender: String) -> [String] { [] }

    func interfaces(at path: String) -> [String] { [] }

    func objectExists(at path: String, sender: String) -> Bool { false }

    /// Nothing is written: replies go out at once.
    let commitBarrier = CommitBarrier(store: nil)
    /// Nothing is written here.
    func whenWritesEnd(_ body: @escaping () -> Void) { body() }
}
