// The login keyring's TPM slot (secretd's TPM1 interface, and the unlock at start): once the
// login password has been given, `secretctl tpm enroll` seals the keyring's master key to the
// machine's TPM 2.0 (TPMSlot), so that secretd unlocks the keyring when it starts, with no
// password and no password file; `secretctl tpm remove` drops the slot.

import KeychainCore
import SecretCrypto
import SecretStore
import TPMSealing
import DBusValues

extension Daemon {
    func handleTPM(_ call: MethodCall) -> Result<DBusValue, SecretServiceError> {
        guard isUnconfinedHostClient(call.sender) else {
            return .failure(.forbidden("only unconfined clients outside a sandbox may manage the TPM slot"))
        }
        let args = call.arguments
        switch call.method {
        case "Enroll":
            guard case .array(_, let values) = args[0] else { return .failure(.invalidArgs("pcrs is au")) }
            let pcrs = values.compactMap(\.uint32).map(Int.init)
            return decodeSecret(args[1], from: call.sender).flatMap { password, _ in enrollTPM(password: password, pcrs: pcrs) }
                .map { .tuple([]) }
        case "Remove":
            do {
                let removed = try TPMSlot.remove(from: options.dataDirectory)
                if removed { Log.info("removed the TPM slot of the login keyring; only the password unlocks it at start") }
                tpmFailure = nil
                return .success(.tuple([.boolean(removed)]))
            } catch {
                Log.error("\(error)")
                return .failure(.failed("\(error)"))
            }
        case "GetStatus":
            let slot: TPMSlot?
            do {
                slot = try TPMSlot.load(from: options.dataDirectory)
            } catch {
                return .success(.tuple([.boolean(true), .array(element: "u", []), .string(tctiName), .string("\(error)")]))
            }
            return .success(.tuple([
                .boolean(slot != nil), .array(element: "u", (slot?.pcrs ?? []).map { .uint32(UInt32($0)) }),
                .string(tctiName), .string(tpmFailure ?? ""),
            ]))
        default:
            return .failure(.noSuchObject("no method \(call.method)"))
        }
    }

    /// The TCTI secretd reaches the TPM through, as `tpm-tcti` names it.
    private var tctiName: String { options.configuration.tpmTCTI ?? "default" }

    /// Seals the login keyring's master key to the TPM, once `password` proves the person knows
    /// the login password (with the same waits after wrong passwords as unlocking): whoever sits
    /// at an unlocked session must not be able to make the keyring open without a password.
    private func enrollTPM(password: SecureBytes, pcrs: [Int]) -> Result<Void, SecretServiceError> {
        guard pcrs.allSatisfy((0...23).contains) else { return .failure(.invalidArgs("PCRs are 0 to 23")) }
        guard let login = try? store.collection(named: Self.loginName) else {
            return .failure(.failed("there is no login keyring to enroll"))
        }
        return checkPassword(password, of: login, purpose: " (enrolling the TPM)").flatMap { itemKeys in
            guard let master = itemKeys.master else { return .failure(.isLocked("the keyring is locked")) }
            do throws(TPMSlot.Failure) {
                let slot = try TPMSlot.enroll(masterKey: master, of: login, pcrs: pcrs, tcti: options.configuration.tpmTCTI)
                // The new slot must open before it replaces the old one.
                guard try slot.open(for: login, tcti: options.configuration.tpmTCTI).constantTimeEquals(master) else {
                    return .failure(.failed("the TPM gave back another key; nothing was enrolled"))
                }
                try slot.save(in: options.dataDirectory)
            } catch {
                Log.warning("cannot enroll the TPM: \(error)")
                return .failure(.failed(Self.tpmAdvice(error)))
            }
            tpmFailure = nil
            Log.info("sealed the login keyring's key to the TPM (\(Self.describe(pcrs))); secretd unlocks it at start")
            return .success(())
        }
    }

    /// Unlocks the login keyring from its TPM slot, if it has one and is locked; before
    /// ``start``. A slot that does not open is logged with what to do, and the keyring stays
    /// locked: its password still opens it.
    public func unlockLoginWithTPM() {
        guard let login = try? store.collection(named: Self.loginName), isLocked(login) else { return }
        do {
            guard let slot = try TPMSlot.load(from: options.dataDirectory) else { return }
            let master = try slot.open(for: login, tcti: options.configuration.tpmTCTI)
            keys.unlocked(login, with: try Store.ItemKeys(master: master), announcing: false)
            tpmFailure = nil
            Log.info("unlocked the login keyring with the TPM (\(Self.describe(slot.pcrs)))")
        } catch {
            tpmFailure = "\(error)"
            Log.warning("the TPM did not unlock the login keyring: \(error); it stays locked")
        }
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
}
