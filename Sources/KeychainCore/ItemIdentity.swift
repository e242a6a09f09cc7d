// What makes two items the same item to a write that replaces one (`secretctl store`,
// secretd's `Import1.ImportItems`): one rule for the library, secretctl and secretd.

/// When two items are the same item: their attributes are equal once `xdg:schema` is left out.
package enum ItemIdentity {
    /// libsecret's schema attribute, which two copies of one item may spell differently.
    package static let schemaAttribute = "xdg:schema"

    /// What of `attributes` tells an item apart: all of them but `xdg:schema`.
    package static func of(_ attributes: [String: String]) -> [String: String] {
        attributes.filter { $0.key != schemaAttribute }
    }

    /// What of `attributes` tells an item apart that secretd keeps as it was sent: it may add
    /// an access group (``AccessGroupNames/attribute``) and an accessibility
    /// (``ItemAccessibility/attribute``) when it places the item, so two items that differ
    /// here are never the same item once placed.
    package static func asSent(_ attributes: [String: String]) -> [String: String] {
        attributes.filter { $0.key != schemaAttribute && $0.key != AccessGroupNames.attribute && $0.key != ItemAccessibility.attribute }
    }
}
