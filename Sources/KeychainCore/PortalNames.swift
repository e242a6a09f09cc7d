// The xdg-desktop-portal Secret backend's names, for every part that spells them: secretd (what
// it serves and how it stores app keys), the gnome-keyring import (keys brought over are filed
// the same way), secretctl (what it lists) and the tests. gnome-keyring and oo7 use the same
// attribute and schema, so keys brought from them are found.

/// The portal backend's object, interfaces and the way an app key is stored.
package enum PortalNames {
    /// The object the portal frontend calls (`org.freedesktop.impl.portal.Secret`), and the
    /// parent of its request handles.
    package static let path = "/org/freedesktop/portal/desktop"
    /// The backend interface (version 1: `RetrieveSecret`).
    package static let secretInterface = "org.freedesktop.impl.portal.Secret"
    /// The interface of a request handle (`Close`).
    package static let requestInterface = "org.freedesktop.impl.portal.Request"
    /// The attribute that names the app an app key belongs to.
    package static let appIDAttribute = "app_id"
    /// The attribute libsecret names an item's schema with.
    package static let schemaAttribute = ItemIdentity.schemaAttribute
    /// The schema of app keys.
    package static let schema = "org.freedesktop.portal.Secret"
    /// The length of an app key, in bytes.
    package static let keyLength = 64

    /// The access group of `appID`'s key: the app's own (``AccessGroupNames/appGroup(of:)``).
    package static func group(of appID: String) -> String { AccessGroupNames.appGroup(of: appID) }

    /// Whether `id` is a Flatpak app id: a well-known D-Bus name (as Flatpak requires) of three
    /// or more elements, short enough for its group name to fit in 255 bytes.
    package static func isAppID(_ id: String) -> Bool {
        SecretServiceNames.isWellKnownBusName(id) && id.utf8.split(separator: UInt8(ascii: ".")).count >= 3
            && group(of: id).utf8.count <= AccessGroupNames.maximumLength
    }
}
