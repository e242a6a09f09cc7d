/// Why a file of the sync repository was refused, or an operation on the vault failed. Nothing
/// local changes for a refused file; messages never contain a secret or a label.
public enum SyncError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The vault, or a request about it, does not allow the operation (no vault on the remote,
    /// a vault there already, no such device, a wrong code, this device removed).
    case vault(String)
    /// Not an item file of this format (wrong magic or version, truncated, extra bytes).
    case malformed(String)
    /// The file's name is not the item id its header names: it was renamed or moved.
    case renamed(file: String)
    /// The file belongs to another vault (another user's, or another keyring's).
    case foreignVault(file: String)
    /// The file does not open under the vault key it names: altered, or made with a key this
    /// device does not have.
    case tampered(file: String)
    /// It was sealed with a key generation this device was never given (after it was removed
    /// from the vault, every new item is).
    case unknownKeyGeneration(file: String, generation: UInt32)
    /// An older version of the item from the same device than one already seen: a file put
    /// back by the remote.
    case replayed(file: String)
    /// It was sealed with a key generation that had been replaced before the version's own
    /// time: written by a device removed from the vault, which still had that key.
    case retiredKey(file: String, generation: UInt32)
    /// git could not reach the remote, or failed (its last lines of output; never a secret,
    /// as the repository holds none).
    case transport(String)

    /// A one-line description.
    public var description: String {
        switch self {
        case .vault(let what): return what
        case .malformed(let what): return "not a sync item file: \(what)"
        case .renamed(let file): return "\(file) was renamed: its name is not the item it holds"
        case .foreignVault(let file): return "\(file) belongs to another vault"
        case .tampered(let file): return "\(file) was altered, or sealed with a key this device does not have"
        case .unknownKeyGeneration(let file, let generation):
            return "\(file) is sealed with vault key \(generation), which this device was not given"
        case .replayed(let file): return "\(file) is an older version of the item than one already seen (replayed)"
        case .retiredKey(let file, let generation):
            return "\(file) is sealed with vault key \(generation), which was replaced before it was written (a removed device's)"
        case .transport(let message): return message
        }
    }
}
