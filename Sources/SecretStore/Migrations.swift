/// The schema, as an ordered list of migrations; `PRAGMA user_version` records how many ran.
enum Migrations {
    /// One upgrade by one version: SQL, or code for what SQL cannot say.
    enum Step: Sendable {
        case sql(String)
        case code(@Sendable (Database) throws(StoreError) -> Void)
    }

    /// Every step this build runs: the shipped ones, then ``unreleased`` (none in a build of
    /// this version's source).
    static let steps: [Step] = shipped + unreleased

    /// Each entry upgrades the schema by one version; never edit one that has shipped.
    private static let shipped: [Step] = [
        .sql(
        // 1: collections with wrapped keys, aliases, sealed items, hashed attribute index.
        """
        CREATE TABLE collections (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            uuid BLOB NOT NULL UNIQUE,
            label TEXT NOT NULL,
            created INTEGER NOT NULL,
            modified INTEGER NOT NULL,
            kdf_salt BLOB NOT NULL,
            kdf_iterations INTEGER NOT NULL,
            kdf_memory_kib INTEGER NOT NULL,
            kdf_lanes INTEGER NOT NULL,
            wrapped_key BLOB NOT NULL
        );
        CREATE TABLE aliases (
            alias TEXT PRIMARY KEY,
            collection_id INTEGER NOT NULL REFERENCES collections(id) ON DELETE CASCADE
        );
        CREATE TABLE items (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            collection_id INTEGER NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
            created INTEGER NOT NULL,
            modified INTEGER NOT NULL,
            sealed BLOB NOT NULL
        );
        CREATE INDEX items_by_collection ON items(collection_id);
        CREATE TABLE attribute_hashes (
            item_id INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
            hash BLOB NOT NULL,
            PRIMARY KEY (item_id, hash)
        ) WITHOUT ROWID;
        CREATE INDEX attribute_hashes_by_hash ON attribute_hashes(hash);
        """),
        // 2: each item's access group in the clear, so secretd can enforce it while locked.
        // Items from version 1 get theirs when their collection is next unlocked.
        .sql("""
        ALTER TABLE items ADD COLUMN access_group TEXT;
        CREATE INDEX items_by_access_group ON items(access_group);
        """),
        // 3: a search index a third the size. Each attribute is indexed by the first 8 bytes of
        // its hash, in one table keyed (hash, item); each item lists its own keys, which a write
        // or delete removes. items_by_collection goes: nearly every item is in one collection.
        .code(shrinkAttributeIndex),
        // 4: smaller rows (StoredAccessGroup). `default`, nearly every item's group, is NULL and
        // an unknown group (items from version 1) the empty text; items_by_access_group goes (a
        // group is looked up among a collection's items, nearly all in `default`); and so does
        // attribute_keys: a write or delete, which needs the collection's key anyway, finds an
        // item's index keys from its sealed attributes.
        .sql("""
        DROP INDEX items_by_access_group;
        UPDATE items SET access_group = CASE
            WHEN access_group IS NULL THEN ''
            WHEN access_group = 'default' THEN NULL
            ELSE access_group END;
        ALTER TABLE items DROP COLUMN attribute_keys;
        """),
        // 5: which items survive an ordinary lock (accessibility class after-first-unlock,
        // sealed with a key of their own); NULL, every item so far, for those that do not.
        .sql("ALTER TABLE items ADD COLUMN survives_lock INTEGER"),
        // 6: sync (secretctl sync): each synced collection's remote and sealed sync state; the
        // random sync id of each local item (kept after the item is deleted, until its delete
        // marker is published); local changes not yet published, stamped when made; and the
        // versions that lost a merge (an item's history), sealed under the master key.
        .sql("""
        CREATE TABLE sync_vaults (
            collection_id INTEGER PRIMARY KEY REFERENCES collections(id) ON DELETE CASCADE,
            remote TEXT NOT NULL,
            state BLOB NOT NULL,
            last_round INTEGER,
            last_error TEXT,
            resolved INTEGER NOT NULL DEFAULT 0
        );
        CREATE TABLE sync_items (
            item_id INTEGER PRIMARY KEY,
            collection_id INTEGER NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
            sync_id BLOB NOT NULL UNIQUE
        );
        CREATE TABLE sync_changes (
            item_id INTEGER PRIMARY KEY,
            collection_id INTEGER NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
            milliseconds INTEGER NOT NULL,
            counter INTEGER NOT NULL,
            deleted INTEGER NOT NULL
        );
        CREATE TABLE sync_history (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            collection_id INTEGER NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
            sync_id BLOB NOT NULL,
            milliseconds INTEGER NOT NULL,
            counter INTEGER NOT NULL,
            device BLOB NOT NULL,
            kept INTEGER NOT NULL,
            sealed BLOB
        );
        CREATE INDEX sync_history_by_item ON sync_history(sync_id);
        """),
        // 7: quotas (secretd.conf's quota-items and quota-bytes). Each item names the program
        // that created it by a hash, as attributes are (Store.creatorKey; NULL for items from
        // before, imports and arrivals from sync, which count for nobody), and each creator's
        // items and their sealed bytes are counted as they are written, by triggers, so that a
        // quota check is one lookup and no write path can forget to count.
        .sql("""
        ALTER TABLE items ADD COLUMN creator BLOB;
        CREATE TABLE creator_usage (
            creator BLOB PRIMARY KEY,
            items INTEGER NOT NULL,
            bytes INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TRIGGER creator_usage_insert AFTER INSERT ON items WHEN NEW.creator IS NOT NULL BEGIN
            INSERT INTO creator_usage (creator, items, bytes) VALUES (NEW.creator, 1, length(NEW.sealed))
                ON CONFLICT (creator) DO UPDATE SET items = items + 1, bytes = bytes + length(NEW.sealed);
        END;
        CREATE TRIGGER creator_usage_update AFTER UPDATE OF sealed ON items WHEN NEW.creator IS NOT NULL BEGIN
            UPDATE creator_usage SET bytes = bytes + length(NEW.sealed) - length(OLD.sealed) WHERE creator = NEW.creator;
        END;
        CREATE TRIGGER creator_usage_delete AFTER DELETE ON items WHEN OLD.creator IS NOT NULL BEGIN
            UPDATE creator_usage SET items = items - 1, bytes = bytes - length(OLD.sealed) WHERE creator = OLD.creator;
        END;
        """),
        // 8: the audit trail (secretctl audit). Entries are sealed for a key pair whose public
        // half is in the clear, so secretd can write them while every keyring is locked; the
        // private half is sealed under the master key of the keyring that holds it, so reading
        // them needs that keyring unlocked. Each entry keeps the time (milliseconds) in the
        // clear, for pruning and --since, and the public key of the writer that sealed it.
        .sql("""
        CREATE TABLE audit_keys (
            id INTEGER PRIMARY KEY,
            collection_id INTEGER NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
            public_key BLOB NOT NULL,
            sealed_private_key BLOB NOT NULL,
            created INTEGER NOT NULL
        );
        CREATE TABLE audit_entries (
            id INTEGER PRIMARY KEY,
            key_id INTEGER NOT NULL REFERENCES audit_keys(id) ON DELETE CASCADE,
            time INTEGER NOT NULL,
            writer BLOB NOT NULL,
            sealed BLOB NOT NULL
        );
        CREATE INDEX audit_entries_by_time ON audit_entries(time);
        CREATE INDEX audit_entries_by_key ON audit_entries(key_id);
        """),
        // 9: remembered consent for new readers (secretctl consent): which identity the person
        // always allowed to read which access group, and the SHA-256 of the executable it was
        // allowed for (NULL: any executable of that identity, as `secretctl consent allow` gives
        // identities that name no file).
        .sql("""
        CREATE TABLE reader_consents (
            identity TEXT NOT NULL,
            access_group TEXT NOT NULL,
            executable_digest BLOB,
            granted INTEGER NOT NULL,
            PRIMARY KEY (identity, access_group)
        ) WITHOUT ROWID;
        """),
        // 10: the sync state per item (issue 51): each item file's entry (the version this
        // machine holds and what it saw of it from each device), sealed under the master key on
        // its own, so that a round writes what it changed; sync_vaults.state keeps the rest.
        // States from before move into rows when secretd next opens them.
        .sql("""
        CREATE TABLE sync_entries (
            collection_id INTEGER NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
            name TEXT NOT NULL,
            sealed BLOB NOT NULL,
            PRIMARY KEY (collection_id, name)
        ) WITHOUT ROWID;
        """),
    ]

    private static func shrinkAttributeIndex(_ database: Database) throws(StoreError) {
        try database.execute("""
            CREATE TABLE attribute_index (
                hash BLOB NOT NULL,
                item_id INTEGER NOT NULL,
                PRIMARY KEY (hash, item_id)
            ) WITHOUT ROWID;
            ALTER TABLE items ADD COLUMN attribute_keys BLOB NOT NULL DEFAULT x'';
            INSERT OR IGNORE INTO attribute_index (hash, item_id) SELECT substr(hash, 1, 8), item_id FROM attribute_hashes;
            """)
        var keys: [Int64: [UInt8]] = [:]
        for row in try database.rows("SELECT item_id, substr(hash, 1, 8) FROM attribute_hashes ORDER BY item_id, hash") {
            guard let id = row[0].integer, let key = row[1].blob else { continue }
            keys[id, default: []] += key
        }
        for (id, itemKeys) in keys {
            try database.run("UPDATE items SET attribute_keys = ? WHERE id = ?", [.blob(itemKeys), .integer(id)])
        }
        try database.execute("DROP TABLE attribute_hashes; DROP INDEX items_by_collection")
    }

    /// The schema version this build writes.
    static var currentVersion: Int { steps.count }

    /// The tables a file at `version` (1 or later) has; one without them is not ours.
    static func tables(at version: Int) -> Set<String> {
        var tables: Set = ["collections", "aliases", "items", version < 3 ? "attribute_hashes" : "attribute_index"]
        if version >= 6 { tables.formUnion(["sync_vaults", "sync_items", "sync_changes", "sync_history"]) }
        if version >= 7 { tables.insert("creator_usage") }
        if version >= 8 { tables.formUnion(["audit_keys", "audit_entries"]) }
        if version >= 9 { tables.insert("reader_consents") }
        if version >= 10 { tables.insert("sync_entries") }
        return tables
    }

    /// Refuses, before anything is written to it, a database from a newer build and another
    /// program's SQLite file.
    static func check(_ database: Database) throws(StoreError) {
        let found = try database.userVersion
        guard found >= 0 else { throw .corrupted("database schema version \(found) is impossible") }
        if found > currentVersion { throw .newerSchema(found: found, supported: currentVersion) }
        let present = Set(try database.rows("SELECT name FROM sqlite_master WHERE type = 'table'").compactMap { $0.first?.text })
        if found == 0 ? !present.isEmpty : !tables(at: found).isSubset(of: present) {
            throw .corrupted("the file is another program's SQLite database, not secretd's")
        }
    }

    /// Brings `database` up to ``currentVersion``; refuses what ``check(_:)`` refuses.
    static func migrate(_ database: Database) throws(StoreError) {
        try check(database)
        let found = try database.userVersion
        for version in found..<currentVersion {
            try database.transaction { () throws(StoreError) in
                switch steps[version] {
                case .sql(let sql): try database.execute(sql)
                case .code(let step): try step(database)
                }
                try database.execute("PRAGMA user_version = \(version + 1)")
            }
        }
        // Give back at once the pages that versions 3 and 4 free: the version 2 index (two
        // thirds of a large file), then a fifth of each item's row.
        if found > 0 && found < 4 { try database.execute("VACUUM") }
    }
}
