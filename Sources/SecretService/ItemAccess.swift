/// What a caller may do with an item, given the item's group.
enum ItemAccess {
    /// Everything: the caller belongs to the group (or was allowed once).
    case full
    /// The item shows as locked; unlocking it asks the person (an `ask` group).
    case askable
    /// The item does not exist for this caller.
    case hidden
}
