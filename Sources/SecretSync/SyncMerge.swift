/// The merge rule, per item, the same on every machine: the version with the higher
/// (timestamp, device) wins; the losing one is kept as the item's history, so no edit
/// disappears silently; a delete is a version like any other (a marker); and a version older
/// than one already seen from the same device is a replay, refused.
public enum SyncMerge {
    /// What to do with a version of an item that arrived from the repository.
    public enum Decision: Equatable, Sendable {
        /// It is the version this machine holds already.
        case same
        /// It wins: it replaces the local version, which (if any) goes to the history.
        case take(losing: SyncHeader?)
        /// The local version wins; the arrived one goes to the history.
        case keep(losing: SyncHeader)
        /// Refused, and nothing changes.
        case refuse(SyncError)
    }

    /// The decision for `arrived`, given the `local` version of its item (nil: none yet) and
    /// the latest timestamp this machine has seen for the item from the arrived version's
    /// device (nil: none).
    public static func decide(arrived: SyncHeader, local: SyncHeader?, seenFromDevice: SyncTimestamp?) -> Decision {
        if let local, local == arrived { return .same }
        if let seen = seenFromDevice, arrived.timestamp < seen { return .refuse(.replayed(file: arrived.fileName)) }
        guard let local else { return .take(losing: nil) }
        if local.timestamp == arrived.timestamp && local.device == arrived.device {
            // The same version sealed twice (another nonce, or altered in the clear): one of
            // them is not what its device made.
            return .refuse(.replayed(file: arrived.fileName))
        }
        return arrived.wins(over: local) ? .take(losing: local) : .keep(losing: arrived)
    }
}
