// The tables as the migrations leave them (Migrations.swift), one column list per table. Every
// SELECT, INSERT and UPDATE list in Store is built from these, and rows decode by their cases
// (Row.swift). A test holds each list to `PRAGMA table_info` of a freshly migrated file, so a
// column added to a migration and not here, or here and not in a migration, fails it.
//
// Adding a plain column to a table: a migration step that adds it, a case here (in table
// order: an added column comes last), and, if a record holds it, its field and its line in
// that record's decoder (ItemRecord.swift, CollectionRecord.swift).

import KeychainCore

/// The columns of `collections`: one row per collection, with its wrapped master key.
package enum CollectionColumn: Int, TableColumn {
    /// The database id.
    case id
    /// The name in the collection's object path.
    case name
    /// The random identity sealed data is bound to.
    case uuid
    /// The label shown to users.
    case label
    /// Creation time, seconds since 1970.
    case created
    /// Last change, seconds since 1970.
    case modified
    /// The Argon2id salt.
    case kdfSalt
    /// Argon2id's passes.
    case kdfIterations
    /// Argon2id's memory, in KiB.
    case kdfMemoryKiB
    /// Argon2id's lanes.
    case kdfLanes
    /// The master key, sealed under the key derived from the password.
    case wrappedKey

    package static let table = "collections"

    package var definition: (name: String, type: String) {
        switch self {
        case .id: ("id", "INTEGER")
        case .name: ("name", "TEXT")
        case .uuid: ("uuid", "BLOB")
        case .label: ("label", "TEXT")
        case .created: ("created", "INTEGER")
        case .modified: ("modified", "INTEGER")
        case .kdfSalt: ("kdf_salt", "BLOB")
        case .kdfIterations: ("kdf_iterations", "INTEGER")
        case .kdfMemoryKiB: ("kdf_memory_kib", "INTEGER")
        case .kdfLanes: ("kdf_lanes", "INTEGER")
        case .wrappedKey: ("wrapped_key", "BLOB")
        }
    }
}

/// The columns of `aliases`: which collection each alias (`default`) points at.
package enum AliasColumn: Int, TableColumn {
    /// The alias.
    case alias
    /// The database id of the collection it points at.
    case collectionID

    package static let table = "aliases"

    package var definition: (name: String, type: String) {
        switch self {
        case .alias: ("alias", "TEXT")
        case .collectionID: ("collection_id", "INTEGER")
        }
    }
}

/// The columns of `items`: one row per item, its contents sealed.
package enum ItemColumn: Int, TableColumn {
    /// The database id, in the item's object path.
    case id
    /// The database id of its collection.
    case collectionID
    /// Creation time, seconds since 1970.
    case created
    /// Last change, seconds since 1970.
    case modified
    /// Label, attributes and secret, sealed with the collection's master key (ItemContents).
    case sealed
    /// The access group, in the clear so it is enforced while locked (schema version 2), as
    /// ``StoredAccessGroup`` writes it.
    case accessGroup
    /// 1 when the item survives an ordinary lock (class `after-first-unlock`, sealed with
    /// ``Store/ItemKeys/afterFirstUnlock``), else NULL (schema version 5), so secretd knows,
    /// while the collection is locked, which key opens the item.
    case survivesLock
    /// Who created it, as ``Store/creatorKey(_:)`` hashes the name of the program (schema
    /// version 7); NULL for items that count for nobody's quota.
    case creator

    package static let table = "items"

    package var definition: (name: String, type: String) {
        switch self {
        case .id: ("id", "INTEGER")
        case .collectionID: ("collection_id", "INTEGER")
        case .created: ("created", "INTEGER")
        case .modified: ("modified", "INTEGER")
        case .sealed: ("sealed", "BLOB")
        case .accessGroup: ("access_group", "TEXT")
        case .survivesLock: ("survives_lock", "INTEGER")
        case .creator: ("creator", "BLOB")
        }
    }
}

/// How `items.access_group` holds an item's group (schema version 4): NULL for `default`,
/// the group of nearly every item, so it takes no space; the empty text (never a group's name)
/// for an item from before version 2, whose group is unknown until its collection is next
/// unlocked; any other group by its name.
package enum StoredAccessGroup {
    /// The column's value for `group` (nil: unknown).
    static func value(_ group: String?) -> Database.Value {
        switch group {
        case nil: .text("")
        case AccessGroupNames.defaultGroup: .null
        case let name?: .text(name)
        }
    }

    /// The group a column value stands for (nil: unknown).
    static func group(_ value: String?) -> String? {
        switch value {
        case nil: AccessGroupNames.defaultGroup
        case "": nil
        case let name?: name
        }
    }

    /// The SQL condition on `column` that holds for the items of `group`, with its value.
    static func condition(_ column: String, isIn group: String) -> (sql: String, values: [Database.Value]) {
        group == AccessGroupNames.defaultGroup ? ("\(column) IS NULL", []) : ("\(column) = ?", [.text(group)])
    }

    /// The SQL condition on `column` that holds for items whose group is unknown.
    static func unknownCondition(_ column: String) -> String { "\(column) = ''" }
}

/// The columns of `attribute_index`: the search index, one row per attribute of each item.
package enum IndexColumn: Int, TableColumn {
    /// The attribute's key (``Store/attributeKey(name:value:)``).
    case hash
    /// The database id of the item that has it.
    case itemID

    package static let table = "attribute_index"

    package var definition: (name: String, type: String) {
        switch self {
        case .hash: ("hash", "BLOB")
        case .itemID: ("item_id", "INTEGER")
        }
    }
}

/// The columns of `creator_usage` (schema version 7): what each program that created items
/// has stored, kept by triggers on `items` (Migrations.swift), for the quotas.
package enum CreatorUsageColumn: Int, TableColumn {
    /// The program, as ``Store/creatorKey(_:)`` hashes it.
    case creator
    /// How many items it created that are still there.
    case items
    /// Their sealed contents' bytes.
    case bytes

    package static let table = "creator_usage"

    package var definition: (name: String, type: String) {
        switch self {
        case .creator: ("creator", "BLOB")
        case .items: ("items", "INTEGER")
        case .bytes: ("bytes", "INTEGER")
        }
    }
}

/// The columns of `sync_vaults` (schema version 6): one row per synced collection.
package enum SyncVaultColumn: Int, TableColumn {
    /// The collection's database id.
    case collectionID
    /// The git remote it syncs through, as the person gave it.
    case remote
    /// The machine's sync state (SecretSync's `SyncVault`), sealed under the master key.
    case state
    /// When the last round ended well (seconds since 1970); NULL before the first.
    case lastRound
    /// Why the last round failed; NULL when it did not.
    case lastError
    /// How many merges so far kept a losing version as history.
    case resolved

    package static let table = "sync_vaults"

    package var definition: (name: String, type: String) {
        switch self {
        case .collectionID: ("collection_id", "INTEGER")
        case .remote: ("remote", "TEXT")
        case .state: ("state", "BLOB")
        case .lastRound: ("last_round", "INTEGER")
        case .lastError: ("last_error", "TEXT")
        case .resolved: ("resolved", "INTEGER")
        }
    }
}

/// The columns of `sync_entries` (schema version 10): each synced item file's entry of the
/// machine's sync state (SecretSync's `SyncVault.encodedEntry`), sealed on its own.
package enum SyncEntryColumn: Int, TableColumn {
    /// The collection's database id.
    case collectionID
    /// The item file's name (its sync id in hex).
    case name
    /// The entry, sealed under the master key.
    case sealed

    package static let table = "sync_entries"

    package var definition: (name: String, type: String) {
        switch self {
        case .collectionID: ("collection_id", "INTEGER")
        case .name: ("name", "TEXT")
        case .sealed: ("sealed", "BLOB")
        }
    }
}

/// The columns of `sync_items` (schema version 6): which local item is which synced item.
package enum SyncItemColumn: Int, TableColumn {
    /// The local item's database id (no foreign key: the row outlives the item until its
    /// delete marker is published).
    case itemID
    /// Its collection's database id.
    case collectionID
    /// The random 16-byte id it has in the sync repository.
    case syncID

    package static let table = "sync_items"

    package var definition: (name: String, type: String) {
        switch self {
        case .itemID: ("item_id", "INTEGER")
        case .collectionID: ("collection_id", "INTEGER")
        case .syncID: ("sync_id", "BLOB")
        }
    }
}

/// The columns of `sync_changes` (schema version 6): local changes not yet published, one per
/// item, stamped with the hybrid logical time they were made.
package enum SyncChangeColumn: Int, TableColumn {
    /// The local item's database id.
    case itemID
    /// Its collection's database id.
    case collectionID
    /// The stamp's milliseconds.
    case milliseconds
    /// The stamp's counter.
    case counter
    /// 1 when the change deleted the item.
    case deleted

    package static let table = "sync_changes"

    package var definition: (name: String, type: String) {
        switch self {
        case .itemID: ("item_id", "INTEGER")
        case .collectionID: ("collection_id", "INTEGER")
        case .milliseconds: ("milliseconds", "INTEGER")
        case .counter: ("counter", "INTEGER")
        case .deleted: ("deleted", "INTEGER")
        }
    }
}

/// The columns of `sync_history` (schema version 6): versions of synced items that lost a
/// merge, so that no edit disappears silently.
package enum SyncHistoryColumn: Int, TableColumn {
    /// The entry's id.
    case id
    /// The collection's database id.
    case collectionID
    /// The item's sync id.
    case syncID
    /// The version's stamp: milliseconds.
    case milliseconds
    /// The version's stamp: counter.
    case counter
    /// The device that made it (16 bytes).
    case device
    /// When it was kept (seconds since 1970).
    case kept
    /// The version's item sealed under the master key; NULL for a delete marker.
    case sealed

    package static let table = "sync_history"

    package var definition: (name: String, type: String) {
        switch self {
        case .id: ("id", "INTEGER")
        case .collectionID: ("collection_id", "INTEGER")
        case .syncID: ("sync_id", "BLOB")
        case .milliseconds: ("milliseconds", "INTEGER")
        case .counter: ("counter", "INTEGER")
        case .device: ("device", "BLOB")
        case .kept: ("kept", "INTEGER")
        case .sealed: ("sealed", "BLOB")
        }
    }
}

/// The columns of `audit_keys` (schema version 8): the key pairs the audit trail is sealed for.
package enum AuditKeyColumn: Int, TableColumn {
    /// The key pair's id.
    case id
    /// The collection whose master key seals the private half.
    case collectionID
    /// The X25519 public half, in the clear: entries are sealed for it while keyrings are locked.
    case publicKey
    /// The private half, sealed under the collection's master key.
    case sealedPrivateKey
    /// When it was made (seconds since 1970).
    case created

    package static let table = "audit_keys"

    package var definition: (name: String, type: String) {
        switch self {
        case .id: ("id", "INTEGER")
        case .collectionID: ("collection_id", "INTEGER")
        case .publicKey: ("public_key", "BLOB")
        case .sealedPrivateKey: ("sealed_private_key", "BLOB")
        case .created: ("created", "INTEGER")
        }
    }
}

/// The columns of `audit_entries` (schema version 8): the audit trail, one sealed entry per event.
package enum AuditEntryColumn: Int, TableColumn {
    /// The entry's id, in the order they were written.
    case id
    /// The key pair it is sealed for.
    case keyID
    /// When it happened (milliseconds since 1970), in the clear for pruning and `--since`.
    case time
    /// The public key of the writer that sealed it (one per secretd run).
    case writer
    /// The entry (``Store/AuditEntry``), sealed with the key the writer shares with the key pair.
    case sealed

    package static let table = "audit_entries"

    package var definition: (name: String, type: String) {
        switch self {
        case .id: ("id", "INTEGER")
        case .keyID: ("key_id", "INTEGER")
        case .time: ("time", "INTEGER")
        case .writer: ("writer", "BLOB")
        case .sealed: ("sealed", "BLOB")
        }
    }
}

/// The columns of `reader_consents` (schema version 9): the readers the person always allowed.
package enum ReaderConsentColumn: Int, TableColumn {
    /// The identity, as `secretctl whoami` names it.
    case identity
    /// The access group it may read.
    case accessGroup
    /// SHA-256 of the executable it was allowed for; NULL: any executable of that identity.
    case executableDigest
    /// When (seconds since 1970).
    case granted

    package static let table = "reader_consents"

    package var definition: (name: String, type: String) {
        switch self {
        case .identity: ("identity", "TEXT")
        case .accessGroup: ("access_group", "TEXT")
        case .executableDigest: ("executable_digest", "BLOB")
        case .granted: ("granted", "INTEGER")
        }
    }
}
