// secretd's AppKeys interface (the desktop portal's app keys), called over GDBus on
// libsecret's connection.

internal import CLibSecret
import DBusValues
import KeychainCore

extension LibSecret {
    /// Calls `method` of secretd's AppKeys interface (``callSecretd(_:_:_:_:encoded:feature:)``).
    private static func callAppKeys(
        _ service: UnsafeMutablePointer<SecretService>, _ method: String, _ arguments: [DBusValue] = []
    ) throws(KeychainError) -> [DBusValue] {
        try callSecretd(service, SecretServiceNames.Interface.appKeys, method, arguments, feature: "app keys of the desktop portal")
    }

    /// Every app key secretd holds: the app, its keyring, when it was made.
    static func appKeys() throws(KeychainError) -> [(app: String, keyring: String, created: UInt64)] {
        try withService { service throws(KeychainError) in
            let reply = try callAppKeys(service, "List")
            guard reply.count == 1, case .array("(sst)", let rows) = reply[0] else {
                throw .protocolError(reason: "the reply to List does not have the declared type")
            }
            return try rows.map { row throws(KeychainError) in
                guard let fields = row.tuple, fields.count == 3, let app = fields[0].string, let keyring = fields[1].string,
                    case .uint64(let created) = fields[2]
                else { throw .protocolError(reason: "the reply to List does not have the declared type") }
                return (app, keyring, created)
            }
        }
    }

    /// Deletes `app`'s key; false when there was none.
    static func deleteAppKey(_ app: String) throws(KeychainError) -> Bool {
        try withService { service throws(KeychainError) in
            let reply = try callAppKeys(service, "Delete", [.string(app)])
            guard reply.count == 1, let deleted = reply[0].boolean else {
                throw .protocolError(reason: "the reply to Delete does not have the declared type")
            }
            return deleted
        }
    }
}
