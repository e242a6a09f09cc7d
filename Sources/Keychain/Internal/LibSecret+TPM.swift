// secretd's TPM1 interface (the login keyring's TPM slot), called over GDBus on libsecret's
// connection; the login password travels in the encrypted session.

internal import CLibSecret
import DBusValues
import KeychainCore

extension LibSecret {
    /// Calls `method` of secretd's TPM1 interface (``callSecretd(_:_:_:_:encoded:feature:)``).
    private static func callTPM(
        _ service: UnsafeMutablePointer<SecretService>, _ method: String, _ arguments: [DBusValue] = [],
        encoded: [OpaquePointer] = []
    ) throws(KeychainError) -> [DBusValue] {
        try callSecretd(service, SecretServiceNames.Interface.tpm, method, arguments, encoded: encoded, feature: "TPM slots")
    }

    /// Seals the login keyring's key to the TPM, bound to `pcrs`, proven by its `password`.
    static func enrollTPM(_ password: SecretBuffer, pcrs: [Int]) throws(KeychainError) {
        try withService { service throws(KeychainError) in
            let list = DBusValue.array(element: "u", pcrs.map { .uint32(UInt32($0)) })
            _ = try callTPM(service, "Enroll", [list], encoded: [try encodedPassword(service, password)])
        }
    }

    /// Drops the TPM slot; false when there was none.
    static func removeTPM() throws(KeychainError) -> Bool {
        try withService { service throws(KeychainError) in
            guard let removed = try callTPM(service, "Remove").first?.boolean else {
                throw .protocolError(reason: "the reply to Remove does not have the declared type")
            }
            return removed
        }
    }

    /// The TPM slot's state.
    static func tpmStatus() throws(KeychainError) -> KeychainProvider.TPMStatus {
        try withService { service throws(KeychainError) in
            let reply = try callTPM(service, "GetStatus")
            guard reply.count == 4, let enrolled = reply[0].boolean, case .array(_, let pcrs) = reply[1],
                let tcti = reply[2].string, let failure = reply[3].string
            else { throw .protocolError(reason: "the reply to GetStatus does not have the declared type") }
            return .init(enrolled: enrolled, pcrs: pcrs.compactMap(\.uint32).map(Int.init), tcti: tcti, lastFailure: failure)
        }
    }
}
