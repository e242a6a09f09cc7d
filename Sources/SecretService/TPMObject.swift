// io.github.secretd.TPM1
//
// The login keyring's TPM slot (secretd's TPM1 interface, and the unlock at start): once the
// login password has been given, `secretctl tpm enroll` seals the keyring's master key to the
// machine's TPM 2.0 (TPMSlot), so that secretd unlocks the keyring when it starts, with no
// password and no password file; `secretctl tpm remove` drops the slot.

import KeychainCore
import Dispatch
import Glibc
import SecretCrypto
import SecretStore
import Synchronization
import TPMSealing
import DBusValues

extension Introspection {
    /// secretd's own: the login keyring's TPM slot.
    static let tpmInterface = BusInterface(name: tpm, objects: .service, methods: [
        Method(name: "Enroll", rule: .unconfined, arguments: [Argument(name: "pcrs", type: "au"), Argument(name: "login_password", type: secret)],
               handler: .later { provider, call, reply throws(SecretServiceError) in
                   try TPMObject(provider).enrollTPM(pcrs: call.argument(0, as: [UInt32].self), password: call.argument(1), sender: call.sender, reply: reply)
               }),
        Method(name: "Remove", rule: .unconfined, results: [Argument(name: "removed", type: "b")],
               handler: .now { provider, _ throws(SecretServiceError) in try TPMObject(provider).removeTPMSlot() }),
        Method(name: "GetStatus", rule: .unconfined, results: [
            Argument(name: "enrolled", type: "b"), Argument(name: "pcrs", type: "au"), Argument(name: "tcti", type: "s"),
            Argument(name: "last_failure", type: "s"),
        ], handler: .now { provider, _ throws(SecretServiceError) in TPMObject(provider).tpmStatus() }),
    ])
}

/// secretd's TPM1 interface and the unlock at start: the login keyring's TPM slot enrolled,
/// removed, described, and opened.
struct TPMObject {
    /// What every object shares.
    let provider: Provider

    /// The object over `provider`.
    init(_ provider: Provider) { self.provider = provider }

    /// `Remove`: the slot is gone; whether there was one.
    fileprivate func removeTPMSlot() throws(SecretServiceError) -> DBusValue {
        do {
            let removed = try TPMSlot.remove(from: provider.options.dataDirectory)
            if removed { Log.info("removed the TPM slot of the login keyring; only the password unlocks it at start") }
            provider.tpmFailure = nil
            return .tuple([.boolean(removed)])
        } catch {
            Log.error("\(error)")
            throw .failed("\(error)")
        }
    }

    /// `GetStatus`: whether a slot is enrolled, its PCRs, the TCTI and the last failure.
    fileprivate func tpmStatus() -> DBusValue {
        let slot: TPMSlot?
        do {
            slot = try TPMSlot.load(from: provider.options.dataDirectory)
        } catch {
            return .tuple([.boolean(true), .array(element: "u", []), .string(tctiName), .string("\(error)")])
        }
        return .tuple([
            .boolean(slot != nil), .array(element: "u", (slot?.pcrs ?? []).map { .uint32(UInt32($0)) }),
            .string(tctiName), .string(provider.tpmFailure ?? ""),
        ])
    }

    /// The TCTI secretd reaches the TPM through, as `tpm-tcti` names it.
    private var tctiName: String { provider.options.configuration.tpmTCTI ?? "default" }

    /// `Enroll`: seals the login keyring's master key to the TPM, once the login password
    /// proves the person knows it (with the same waits after wrong passwords as unlocking):
    /// whoever sits at an unlocked session must not be able to make the keyring open without a
    /// password. The TPM works on a thread of its own; the call is answered when it is done, or
    /// after ``tpmTimeout`` with an error naming the TPM.
    func enrollTPM(
        pcrs requested: [UInt32], password passwordValue: DBusValue, sender: String,
        reply: @escaping (Result<DBusValue, SecretServiceError>) -> Void
    ) {
        let pcrs = requested.map(Int.init)
        guard pcrs.allSatisfy((0...23).contains) else { return reply(.failure(.invalidArgs("PCRs are 0 to 23"))) }
        guard let login = try? provider.keyring.collection(named: Provider.loginName) else {
            return reply(.failure(.failed("there is no login keyring to enroll")))
        }
        switch provider.decodeSecret(passwordValue, from: sender) {
        case .failure(let problem): reply(.failure(problem))
        case .success(let (password, _)):
            provider.checkPassword(password, of: login, purpose: " (enrolling the TPM)") { [weak provider = provider] checked in
                guard case .success(let itemKeys) = checked, let master = itemKeys.master else {
                    if case .failure(let error) = checked { return reply(.failure(error)) }
                    return reply(.failure(.isLocked("the keyring is locked")))
                }
                provider.map(TPMObject.init)?.enrollTPM(login, master: master, pcrs: pcrs, reply: reply)
            }
        }
    }

    /// Seals `master`, the login keyring's key, to the TPM on a thread of its own.
    private func enrollTPM(
        _ login: Store.CollectionRecord, master: SecureBytes, pcrs: [Int], reply: @escaping (Result<DBusValue, SecretServiceError>) -> Void
    ) {
        let (tcti, directory) = (provider.options.configuration.tpmTCTI, provider.options.dataDirectory)
        Self.onTPMThread({ () -> Result<TPMSlot, TPMSlot.Failure> in
            Result { () throws(TPMSlot.Failure) -> TPMSlot in
                let slot = try TPMSlot.enroll(masterKey: master, of: login, pcrs: pcrs, tcti: tcti)
                // The new slot must open before it replaces the old one.
                guard try slot.open(for: login, tcti: tcti).constantTimeEquals(master) else {
                    throw .io("the TPM gave back another key; nothing was enrolled")
                }
                return slot
            }
        }) { [weak provider = provider] outcome in
            guard let provider else { return }
            do throws(TPMSlot.Failure) {
                guard let outcome else { throw .io(Self.noAnswer(tcti)) }
                try outcome.get().save(in: directory)
            } catch {
                Log.warning("cannot enroll the TPM: \(error)")
                return reply(.failure(.failed(Self.tpmAdvice(error))))
            }
            provider.tpmFailure = nil
            Log.info("sealed the login keyring's key to the TPM (\(Self.describe(pcrs))); secretd unlocks it at start")
            reply(.success(.tuple([])))
        }
    }

    private static func noAnswer(_ tcti: String?) -> String {
        "the TPM at \(tcti ?? "default") did not answer within \(Int(tpmTimeout)) s"
    }

    /// Runs `work` on a thread of its own and waits for it, at most ``tpmTimeout``; nil when it
    /// did not finish in time (its result, when it comes, is dropped). For before the main loop.
    private static func waitForTPM<T: Sendable>(_ work: @escaping @Sendable () -> T) -> T? {
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<T?>(nil)
        let started = DetachedThread.start(named: "secretd-tpm") {
            let value = work()
            result.withLock { $0 = value }
            done.signal()
        }
        guard started, done.wait(timeout: .now() + tpmTimeout) == .success else { return nil }
        return result.withLock { $0 }
    }

    /// Runs `work` on a thread of its own and gives its result to `done` on the main loop, or
    /// nil after ``tpmTimeout`` (a later result is dropped).
    private static func onTPMThread<T: Sendable>(_ work: @escaping @Sendable () -> T, done: @escaping (T?) -> Void) {
        // Both ways of finishing run on the main loop: the first one answers.
        var answered = false
        func finish(_ value: T?) {
            guard !answered else { return }
            answered = true
            done(value)
        }
        MainLoop.after(seconds: tpmTimeout) { finish(nil) }
        let started = DetachedThread.start(named: "secretd-tpm") {
            let value = work()
            MainLoop.onMainLoop { finish(value) }
        }
        if !started { finish(nil) }
    }

    /// An enrolment failure as the person should read it.
    private static func tpmAdvice(_ error: TPMSlot.Failure) -> String {
        if case .tpm(.unavailable(let tcti)) = error {
            return "no TPM answers at \(tcti): set tpm-tcti in secretd.conf, or give your user the TPM "
                + "(/dev/tpmrm0 belongs to the group tss: usermod -aG tss USER, then log in again)"
        }
        return "\(error)"
    }

    private static func describe(_ pcrs: [Int]) -> String {
        pcrs.isEmpty ? "bound to no PCR" : "bound to PCR " + pcrs.map(String.init).joined(separator: ", ")
    }

    /// Unlocks the login keyring from its TPM slot, if it has one and is locked; before
    /// ``Daemon/start(ready:refused:)``, so it waits for the TPM (at most ``tpmTimeout``). A slot that does not open
    /// is logged with what to do, and the keyring stays locked: its password still opens it.
    func unlockLoginWithTPM() {
        guard let login = try? provider.keyring.collection(named: Provider.loginName), provider.keyring.isLocked(login) else { return }
        let tcti = provider.options.configuration.tpmTCTI
        do throws(TPMSlot.Failure) {
            guard let slot = try TPMSlot.load(from: provider.options.dataDirectory) else { return }
            let outcome = Self.waitForTPM { () -> Result<SecureBytes, TPMSlot.Failure> in
                Result { () throws(TPMSlot.Failure) in try slot.open(for: login, tcti: tcti) }
            }
            guard let outcome else { throw .io(Self.noAnswer(tcti)) }
            let master = try outcome.get()
            guard let itemKeys = try? Store.ItemKeys(master: master) else { throw .io("cannot derive the keyring's keys") }
            provider.keyring.unlocked(login, with: itemKeys)
            provider.tpmFailure = nil
            Log.info("unlocked the login keyring with the TPM (\(Self.describe(slot.pcrs)))")
        } catch {
            provider.tpmFailure = "\(error)"
            Log.warning("the TPM did not unlock the login keyring: \(error); it stays locked")
        }
    }

    // MARK: - Waiting for the TPM

    /// How long secretd waits for the TPM: a TPM behind a socket can accept and never answer
    /// (libtss2 waits for ever), and neither the start nor a caller may hang on it. 20 s is far
    /// more than a real TPM takes to make its storage key and unseal.
    static var tpmTimeout: Double {
        #if DEBUG
        if let text = getenv(TestHooks.tpmTimeout).map({ String(cString: $0) }), let seconds = Double(text) { return seconds }
        #endif
        return 20
    }
}
