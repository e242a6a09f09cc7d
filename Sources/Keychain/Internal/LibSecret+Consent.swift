// secretd's Consent1 interface (remembered consents of readers), called over GDBus on
// libsecret's connection.

internal import CLibSecret
import DBusValues
import KeychainCore

extension LibSecret {
    /// Calls `method` of secretd's consent interface (``callSecretd(_:_:_:_:encoded:feature:)``).
    private static func callConsent(
        _ service: UnsafeMutablePointer<SecretService>, _ method: String, _ arguments: [DBusValue] = [],
        encoded: [OpaquePointer] = []
    ) throws(KeychainError) -> [DBusValue] {
        try callSecretd(service, SecretServiceNames.Interface.consent, method, arguments, encoded: encoded, feature: "consent for new readers")
    }

    /// secretd's remembered consents, its `consent` setting and the groups that ask.
    static func readerConsents() throws(KeychainError) -> KeychainProvider.ReaderConsents {
        try withService { service throws(KeychainError) in
            let reply = try callConsent(service, "List")
            guard reply.count == 3, case .array(_, let rows) = reply[0], let mode = reply[1].string, let asking = reply[2].strings
            else { throw .protocolError(reason: "the reply to List does not have the declared type") }
            let consents = try rows.map { (row) throws(KeychainError) -> KeychainProvider.ReaderConsent in
                guard let fields = row.tuple, fields.count == 4, let identity = fields[0].string, let group = fields[1].string,
                    let digest = fields[2].string, case .int64(let granted) = fields[3]
                else { throw .protocolError(reason: "a consent in the reply to List does not have the declared type") }
                return .init(identity: identity, group: group, executableDigest: digest.isEmpty ? nil : digest, granted: granted)
            }
            return .init(consents: consents, defaultMode: mode, askingGroups: asking)
        }
    }

    /// Lets `identity` read `group` without asking; the person consents with the login
    /// `password` (sent in the encrypted session), or through secretd's prompt when it is nil.
    static func allowReader(identity: String, group: String, password: SecretBuffer?) throws(KeychainError) {
        try withService { service throws(KeychainError) in
            let reply: [DBusValue]
            if let password {
                reply = try callConsent(service, "Allow", [.string(identity), .string(group)], encoded: [try encodedPassword(service, password)])
            } else {
                reply = try callConsent(service, "Allow", [.string(identity), .string(group), noSecret])
            }
            guard let prompt = reply.first?.objectPath else { throw .protocolError(reason: "the reply to Allow does not have the declared type") }
            guard prompt != SecretServiceNames.Path.none else { return }
            try performPrompt(service, prompt)
        }
    }

    /// Forgets the consent of `identity` for `group`; false when there was none.
    static func revokeReader(identity: String, group: String) throws(KeychainError) -> Bool {
        try withService { service throws(KeychainError) in
            let reply = try callConsent(service, "Revoke", [.string(identity), .string(group)])
            guard let removed = reply.first?.boolean else { throw .protocolError(reason: "the reply to Revoke does not have the declared type") }
            return removed
        }
    }
}
