/// The schema, as an ordered list of migrations; `PRAGMA user_version` records how many ran.
enum Migrations {
    /// Each entry upgrades the schema by one version; never edit one that has shipped.
    static let steps: [String] = [
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
        """,
        // 2: each item's access group in the clear, so secretd can enforce it while locked.
        // Items from version 1 get theirs when their collection is next unlocked.
        """
        ALTER TABLE items ADD COLUMN access_group TEXT;
        CREATE INDEX items_by_access_group ON items(access_group);
        """,
    ]

    /// The schema version this build writes.
    static var currentVersion: Int { steps.count }

    /// The tables every version writes; a file at version 1 or later without them is not ours.
    static let tables: Set<String> = ["collections", "aliases", "items", "attribute_hashes"]

    /// Refuses, before anything is written to it, a database from a newer build and another
    /// program's SQLite file.
    static func check(_ database: Database) throws(StoreError) {
        let found = try database.userVersion
        guard found >= 0 else { throw .corrupted("database schema version \(found) is impossible") }
        if found > currentVersion { throw .newerSchema(found: found, supported: currentVersion) }
        let present = Set(try database.rows("SELECT name FROM sqlite_master WHERE type = 'table'").compactMap { $0.first?.text })
        if found == 0 ? !present.isEmpty : !tables.isSubset(of: present) {
            throw .corrupted("the file is another program's SQLite database, not secretd's")
        }
    }

    /// Brings `database` up to ``currentVersion``; refuses what ``check(_:)`` refuses.
    static func migrate(_ database: Database) throws(StoreError) {
        try check(database)
        let found = try database.userVersion
        for version in found..<currentVersion {
            try database.transaction { () throws(StoreError) in
                try database.execute(steps[version])
                try database.execute("PRAGMA user_version = \(version + 1)")
            }
        }
    }
}
