// What an access group is called, and who may be named a member, for every part that spells
// them: the library (the attribute it writes), secretd (what it stores, parses and enforces),
// secretctl (what it accepts before asking secretd). One definition, so the three cannot drift.

/// The names of access groups: the item attribute, the shared group, and the name rule.
package enum AccessGroupNames {
    /// The attribute that names an item's access group (documented in secretd(1)).
    package static let attribute = "keychain:access-group"
    /// The group of items that carry no access group attribute, shared by every unconfined client.
    package static let defaultGroup = "default"
    /// The longest group name, in bytes.
    package static let maximumLength = 255

    /// What the group of each Flatpak app's own items starts with (`flatpak.ID`): the app
    /// belongs to it, and nobody can be made a member, so the desktop portal's key of that app
    /// (PortalNames) is hidden from every other client.
    package static let appGroupPrefix = "flatpak."

    /// The group of the Flatpak app `appID`.
    package static func appGroup(of appID: String) -> String { appGroupPrefix + appID }

    /// Whether `name` is the group of a Flatpak app, which `access-groups.conf` may not name.
    package static func isAppGroup(_ name: String) -> Bool { name.hasPrefix(appGroupPrefix) }

    /// Whether `name` may name a group: 1 to 255 ASCII letters, digits, '.', '-' or '_', and not
    /// `default` (which every unconfined client shares and needs no section).
    package static func isGroupName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= maximumLength && name != defaultGroup
            && name.unicodeScalars.allSatisfy { $0.isASCIIAlphanumeric || "._-".unicodeScalars.contains($0) }
    }
}

extension Unicode.Scalar {
    /// Whether the scalar is a control or format character (Unicode categories Cc and Cf) or
    /// a line break: nothing that should appear inside a one-line name.
    package var isUnprintable: Bool {
        switch properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator: true
        default: false
        }
    }

    /// Whether the scalar is an ASCII letter or digit.
    package var isASCIIAlphanumeric: Bool {
        ("a"..."z").contains(self) || ("A"..."Z").contains(self) || ("0"..."9").contains(self)
    }
}
