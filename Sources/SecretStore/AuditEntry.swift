import SecretCrypto

extension Store {
    /// One event of the audit trail (`secretctl audit`): what happened to which item or
    /// keyring, who asked (as `secretctl whoami` names it, with its pid and command line) and
    /// how it ended. Sealed whole in `audit_entries`; only its time is in the clear.
    public struct AuditEntry: Sendable, Equatable {
        /// What happened.
        public enum Event: String, Sendable, CaseIterable {
            /// A secret was handed to a client (GetSecret, GetSecrets, the portal, the SSH agent signing).
            case read
            /// An item was created.
            case create
            /// An item's secret, label or attributes were changed.
            case change
            /// An item was deleted.
            case delete
            /// A keyring was unlocked.
            case unlock
            /// A keyring was locked.
            case lock
            /// A keyring was created.
            case createKeyring = "create-keyring"
            /// A keyring was deleted with its items.
            case deleteKeyring = "delete-keyring"
            /// A call was refused: not allowed, locked, a wrong password or PIN.
            case refused
            /// The whole store was replaced by a backup (`secretctl restore`).
            case restore
        }

        /// When (milliseconds since 1970).
        public var time: Int64
        /// What happened.
        public var event: Event
        /// Who asked: a caller identity (`exe:/usr/bin/secret-tool`, `flatpak:org.example.App`,
        /// `unit:backup.service`), `secretd` for what secretd did by itself, `pam_secretd` for a login.
        public var identity: String
        /// The asking process, when there was one.
        public var pid: Int32?
        /// Its command line (arguments separated by spaces, cut at 512 bytes).
        public var command: String?
        /// The keyring (collection name).
        public var keyring: String?
        /// The item's database id.
        public var itemID: Int64?
        /// The item's access group.
        public var accessGroup: String?
        /// The item's label.
        public var label: String?
        /// The item's `service` attribute.
        public var service: String?
        /// The item's `account` (or `username`, `user`) attribute.
        public var account: String?
        /// The method or route (`Item.GetSecret`, `ssh-agent sign`), or why it was refused.
        public var detail: String?

        /// An entry of `event` at `time` asked by `identity`.
        public init(
            time: Int64, event: Event, identity: String, pid: Int32? = nil, command: String? = nil, keyring: String? = nil,
            itemID: Int64? = nil, accessGroup: String? = nil, label: String? = nil, service: String? = nil,
            account: String? = nil, detail: String? = nil
        ) {
            self.time = time
            self.event = event
            self.identity = identity
            self.pid = pid
            self.command = command
            self.keyring = keyring
            self.itemID = itemID
            self.accessGroup = accessGroup
            self.label = label
            self.service = service
            self.account = account
            self.detail = detail
        }
    }

    /// A key pair the audit trail is sealed for: its public half, in the clear.
    public struct AuditKey: Sendable, Equatable {
        /// Its id.
        public let id: Int64
        /// The collection whose master key seals its private half.
        public let collectionID: Int64
        /// The X25519 public half.
        public let publicKey: [UInt8]
    }

    /// What a run of secretd seals audit entries with: a key agreed once, from a fresh X25519
    /// key pair of its own and the trail's public key, so each entry costs one AES-GCM seal.
    public final class AuditWriter: Sendable {
        /// The key pair it seals for.
        public let key: AuditKey
        /// Its own public key, stored with each entry so a reader can agree the same key.
        let writerPublicKey: [UInt8]
        /// The key entries are sealed with.
        let sealingKey: SecureBytes

        init(key: AuditKey, writerPublicKey: [UInt8], sealingKey: SecureBytes) {
            self.key = key
            self.writerPublicKey = writerPublicKey
            self.sealingKey = sealingKey
        }
    }

    /// The audit trail as read back: the entries that opened, and how many did not (sealed
    /// for a keyring that is locked, or damaged).
    public struct AuditReading: Sendable {
        /// The entries, oldest first.
        public var entries: [AuditEntry]
        /// Sealed records that could not be opened: an entry, or the entries of one write
        /// sealed together (``Store/appendAudit(_:by:)``).
        public var unreadable: Int
        /// Keyrings that must be unlocked to read the rest.
        public var lockedKeyrings: [String]
    }
}

extension Store.AuditEntry {
    /// The sealed form's field tags; a tag is never reused for another field.
    private enum Tag: UInt8 {
        case time = 1, event, identity, pid, command, keyring, itemID, accessGroup, label, service, account, detail
    }

    /// The first byte of the sealed form.
    private static let formatVersion: UInt8 = 1
    /// The first byte of entries sealed together (``encoded(together:)``).
    private static let groupVersion: UInt8 = 2

    /// Entries sealed as one (those of one write, at one time): a version byte, then each
    /// entry's ``encoded()`` form, its length (LEB128) first. One entry is its own form, which
    /// every build reads.
    static func encoded(together entries: [Self]) -> [UInt8] {
        guard entries.count != 1 else { return entries[0].encoded() }
        var bytes: [UInt8] = [groupVersion]
        bytes.reserveCapacity(1 + entries.count * 170)
        for entry in entries {
            let one = entry.encoded()
            appendLength(one.count, to: &bytes)
            bytes += one
        }
        return bytes
    }

    /// The entries ``encoded(together:)`` (or ``encoded()``) wrote; nil for bytes it did not write.
    static func decoded(together bytes: UnsafeRawBufferPointer) -> [Self]? {
        guard bytes.first == groupVersion else { return Self(decoding: bytes).map { [$0] } }
        var entries: [Self] = []
        var index = 1
        while index < bytes.count {
            guard let length = readLength(bytes, at: &index), length <= bytes.count - index,
                let entry = Self(decoding: UnsafeRawBufferPointer(rebasing: bytes[index..<(index + length)]))
            else { return nil }
            entries.append(entry)
            index += length
        }
        return entries
    }

    /// Appends `length` as LEB128.
    private static func appendLength(_ length: Int, to bytes: inout [UInt8]) {
        var length = length
        repeat {
            bytes.append(UInt8(length & 0x7f) | (length > 0x7f ? 0x80 : 0))
            length >>= 7
        } while length > 0
    }

    /// The LEB128 length at `index`, which moves past it; nil when it runs past the end or
    /// past 35 bits.
    private static func readLength(_ bytes: UnsafeRawBufferPointer, at index: inout Int) -> Int? {
        var length = 0
        var shift = 0
        while true {
            guard index < bytes.count, shift < 35 else { return nil }
            let byte = bytes[index]
            index += 1
            length |= Int(byte & 0x7f) << shift
            shift += 7
            if byte & 0x80 == 0 { return length }
        }
    }

    /// The entry as it is sealed: a version byte, then each present field as its tag, its
    /// length (LEB128) and its bytes (UTF-8 text, or a number as 8 bytes big-endian). Compact
    /// and a few times cheaper than JSON, which the trail paid on every write.
    func encoded() -> [UInt8] {
        var bytes: [UInt8] = [Self.formatVersion]
        bytes.reserveCapacity(160)
        func put(_ tag: Tag, _ field: [UInt8]) {
            bytes.append(tag.rawValue)
            Self.appendLength(field.count, to: &bytes)
            bytes += field
        }
        func put(_ tag: Tag, _ text: String?) { if let text { put(tag, Array(text.utf8)) } }
        func put(_ tag: Tag, _ number: Int64?) { if let number { put(tag, withUnsafeBytes(of: number.bigEndian) { Array($0) }) } }
        put(.time, time)
        put(.event, event.rawValue)
        put(.identity, identity)
        put(.pid, pid.map(Int64.init))
        put(.command, command)
        put(.keyring, keyring)
        put(.itemID, itemID)
        put(.accessGroup, accessGroup)
        put(.label, label)
        put(.service, service)
        put(.account, account)
        put(.detail, detail)
        return bytes
    }

    /// The entry ``encoded()`` wrote; nil for bytes it did not write. Fields of tags this
    /// build does not know are skipped.
    init?(decoding bytes: UnsafeRawBufferPointer) {
        guard bytes.first == Self.formatVersion else { return nil }
        var fields: [Tag: ArraySlice<UInt8>] = [:]
        let all = Array(bytes)
        var index = 1
        while index < all.count {
            let tag = all[index]
            index += 1
            guard let length = Self.readLength(bytes, at: &index), length <= all.count - index else { return nil }
            if let known = Tag(rawValue: tag) { fields[known] = all[index..<(index + length)] }
            index += length
        }
        func text(_ tag: Tag) -> String? { fields[tag].map { String(decoding: $0, as: UTF8.self) } }
        func number(_ tag: Tag) -> Int64?? {
            guard let field = fields[tag] else { return .some(nil) }
            guard field.count == 8 else { return nil }
            return .some(field.reduce(0) { $0 << 8 | Int64($1) })
        }
        guard let time = number(.time), let time, let eventName = text(.event), let event = Event(rawValue: eventName),
            let identity = text(.identity), let pid = number(.pid), let itemID = number(.itemID)
        else { return nil }
        self.init(
            time: time, event: event, identity: identity, pid: pid.flatMap { Int32(exactly: $0) }, command: text(.command),
            keyring: text(.keyring), itemID: itemID, accessGroup: text(.accessGroup), label: text(.label),
            service: text(.service), account: text(.account), detail: text(.detail))
    }
}
