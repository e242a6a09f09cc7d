import FoundationEssentials
import Keychain

/// What `get`, `show` and `delete` mean by SERVICE ACCOUNT: the generic password of that service
/// and account or, when there is none, the internet password of that server and user (any
/// protocol, port and path; the best match, as ``InternetKeychain`` reads). `list` and `search`
/// show both kinds, an internet password's server in the service column, so whatever they show
/// these verbs can reach.
struct PasswordAddress {
    /// The service or server, as given.
    let service: String
    /// The account or user, as given.
    let account: String
    private let generic: Keychain
    private let internet: InternetKeychain

    /// The passwords of `service` and `account`, in access group `group` when given.
    init(service: String, account: String, group: String?) throws(CommandLineError) {
        self.service = service
        self.account = account
        generic = try Common.keychain(service: service, group: group)
        internet = try CommandLineError.keychain { () throws(KeychainError) in
            try InternetKeychain(server: service, accessGroup: group)
        }
    }

    /// The secret, or nil when neither kind has one.
    func data() throws(CommandLineError) -> Data? {
        try CommandLineError.keychain { () throws(KeychainError) in
            if let secret = try generic.data(for: account) { return secret }
            return try internet.data(for: account)
        }
    }

    /// The item's description (no secret), or nil when neither kind has one.
    func item() throws(CommandLineError) -> KeychainItem? {
        try CommandLineError.keychain { () throws(KeychainError) in
            if let item = try generic.attributes(for: account) { return item }
            return try internet.attributes(for: account)
        }
    }

    /// Deletes the generic password's items or, when there are none, the internet password's;
    /// returns whether anything was deleted.
    func remove() throws(CommandLineError) -> Bool {
        try CommandLineError.keychain { () throws(KeychainError) in
            if try generic.removeValue(for: account) { return true }
            return try internet.removeValue(for: account)
        }
    }

    /// The error of a verb that found nothing.
    var notFound: CommandLineError { Common.notFound(service: service, account: account) }
}
