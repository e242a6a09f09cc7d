import KeychainCore

/// The Secret Service attribute names the library reads and writes.
///
/// Attributes are stored unencrypted by every provider and are what `secret-tool` and other
/// clients search by, so they are part of the library's contract:
///
/// | attribute | generic password | internet password |
/// |---|---|---|
/// | `xdg:schema` | `org.freedesktop.Secret.Generic` | `org.gnome.keyring.NetworkPassword` |
/// | `service` | the service | – |
/// | `account` | the account | – |
/// | `username` | the account (mirror, for Python `keyring`) | – |
/// | `user` | – | the account |
/// | `server`, `protocol`, `port`, `object`, `authtype`, `domain` | – | the key fields |
/// | `comment` | optional comment | optional comment |
/// | `keychain:access-group` | optional access group | optional access group |
/// | `keychain:accessible` | optional accessibility class | optional accessibility class |
public enum KeychainAttributeName {
    /// `xdg:schema`: the schema name libsecret uses to tell kinds of items apart.
    public static let schema = ItemIdentity.schemaAttribute
    /// `service`: the service a generic password belongs to (as with `secret-tool`).
    public static let service = "service"
    /// `account`: the account of a generic password (as with `secret-tool`).
    public static let account = "account"
    /// `username`: a copy of `account`, so Python `keyring` finds the same items.
    public static let username = "username"
    /// `comment`: the optional comment given on write.
    public static let comment = "comment"
    /// `keychain:access-group`: the access group an item belongs to, when one was given.
    public static let accessGroup = AccessGroupNames.attribute
    /// `keychain:accessible`: the item's ``KeychainAccessibility``, when one was given.
    public static let accessibility = ItemAccessibility.attribute

    /// `user`: the account of an internet password (GNOME's network-password schema).
    public static let user = "user"
    /// `server`: the host name of an internet password.
    public static let server = "server"
    /// `protocol`: the protocol of an internet password, in lower case (`https`, `smb`, …).
    public static let `protocol` = "protocol"
    /// `port`: the port of an internet password, in decimal.
    public static let port = "port"
    /// `object`: the path of an internet password (GNOME calls it the object).
    public static let object = "object"
    /// `authtype`: the authentication type of an internet password.
    public static let authenticationType = "authtype"
    /// `domain`: the security domain (for example a Windows domain) of an internet password.
    public static let domain = "domain"

    /// The schema name stored with generic passwords; `secret-tool store` uses the same.
    public static let genericSchema = "org.freedesktop.Secret.Generic"
    /// The schema name stored with internet passwords; GNOME applications use the same.
    public static let networkSchema = "org.gnome.keyring.NetworkPassword"
}
