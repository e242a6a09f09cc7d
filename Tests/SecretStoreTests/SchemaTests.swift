import Foundation
import Testing

@testable import SecretCrypto
@testable import SecretStore

/// The column lists of Schema.swift, the tables the migrations make, and the records' decoders
/// agree: a column added to one and not the others fails here, saying where.
@Suite struct SchemaTests {
    /// A fresh store's file, migrated from nothing, holding a collection and an item with a
    /// value in every column.
    func freshDatabase() throws -> (Store, Database) {
        let (store, _) = try makeStore()
        let (login, key) = try store.createCollection(name: "login", label: "Login", password: secret("p"), parameters: .testing)
        _ = try store.createItem(
            in: login, keys: key,
            contents: ItemContents(
                label: "l", attributes: ["service": "s", "keychain:access-group": "com.example.g"], secret: secret("v"),
                contentType: "text/plain"))
        try store.setAlias("default", to: login)
        return (store, try Database(path: store.databaseURL.path))
    }

    /// The names and declared types of `table`'s columns, in table order.
    func tableInfo(_ table: String, in database: Database) throws -> [String] {
        // PRAGMA table_info rows: cid, name, type, notnull, dflt_value, pk.
        try database.rows("PRAGMA table_info(\(table))").map { "\($0[1].text ?? "?") \($0[2].text ?? "?")" }
    }

    func expectListMatchesTable<Column: TableColumn>(_: Column.Type, in database: Database) throws {
        let listed = Column.allCases.map { "\($0.name) \($0.definition.type)" }
        let migrated = try tableInfo(Column.table, in: database)
        #expect(
            listed == migrated,
            "Schema.swift lists \(Column.table) as \(listed), but the migrations make \(migrated): add the column to both, in table order")
        #expect(
            Column.allCases.map(\.rawValue) == Array(0..<Column.allCases.count),
            "\(Column.self)'s raw values must be 0, 1, 2, … in case order (rows find columns by them)")
    }

    @Test("each table's column list is the table a migrated database has: names, types, order")
    func columnListsMatchTables() throws {
        let (_, database) = try freshDatabase()
        try expectListMatchesTable(CollectionColumn.self, in: database)
        try expectListMatchesTable(AliasColumn.self, in: database)
        try expectListMatchesTable(ItemColumn.self, in: database)
        try expectListMatchesTable(IndexColumn.self, in: database)
        try expectListMatchesTable(SyncVaultColumn.self, in: database)
        try expectListMatchesTable(SyncEntryColumn.self, in: database)
        try expectListMatchesTable(SyncItemColumn.self, in: database)
        try expectListMatchesTable(SyncChangeColumn.self, in: database)
        try expectListMatchesTable(SyncHistoryColumn.self, in: database)
        try expectListMatchesTable(CreatorUsageColumn.self, in: database)
        try expectListMatchesTable(AuditKeyColumn.self, in: database)
        try expectListMatchesTable(AuditEntryColumn.self, in: database)
        try expectListMatchesTable(ReaderConsentColumn.self, in: database)
        let tables = Set(
            try database.rows("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
                .compactMap { $0.first?.text })
        let listed: Set = [
            CollectionColumn.table, AliasColumn.table, ItemColumn.table, IndexColumn.table, SyncVaultColumn.table,
            SyncEntryColumn.table, SyncItemColumn.table, SyncChangeColumn.table, SyncHistoryColumn.table, CreatorUsageColumn.table,
            AuditKeyColumn.table, AuditEntryColumn.table, ReaderConsentColumn.table,
        ]
        #expect(tables == listed, "the migrations make tables \(tables.sorted()), Schema.swift lists \(listed.sorted())")
        #expect(Migrations.tables(at: Migrations.currentVersion) == listed)
    }

    /// Values that differ from `value` in a way a decoder reading that column would notice.
    func changed(_ value: Database.Value) -> [Database.Value] {
        switch value {
        case .integer(let number): [.integer(number &+ 1)]
        case .text(let text): [.text(text + "x")]
        case .blob(let bytes): [.blob(bytes + [1])]
        case .null: [.integer(1), .text("x"), .blob([1])]
        }
    }

    /// Reads a real row of `selection` and checks `decode` reads every one of its columns: a
    /// change to any of them changes the record.
    func expectDecoderReadsEveryColumn<Column: TableColumn, Record: Equatable>(
        _ selection: Selection<Column>, _ decode: (Row<Column>) -> Record, in database: Database
    ) throws {
        let values = try #require(try database.rows("SELECT \(selection.list()) FROM \(Column.table)").first)
        let record = decode(Row(values, selection))
        for (position, column) in selection.columns.enumerated() {
            let noticed = changed(values[position]).contains { change in
                var altered = values
                altered[position] = change
                return decode(Row(altered, selection)) != record
            }
            #expect(
                noticed,
                "\(Record.self) is read from \(Column.table).\(column.name) but its decoder ignores it: read it into the record, or leave it out of the record's columns")
        }
    }

    @Test("each record's decoder reads every column its record is read from, and agrees with the store")
    func decodersReadTheirColumns() throws {
        let (store, database) = try freshDatabase()
        try expectDecoderReadsEveryColumn(Store.CollectionRecord.columns, Store.CollectionRecord.init, in: database)
        try expectDecoderReadsEveryColumn(Store.ItemRecord.columns, Store.ItemRecord.init, in: database)
        // The same row read through the store and decoded from its values.
        let values = try #require(try database.rows("SELECT \(Store.ItemRecord.columns.list()) FROM items").first)
        let item = Store.ItemRecord(Row(values, Store.ItemRecord.columns))
        #expect(try store.item(id: item.id) == item)
        #expect(item.accessGroup == "com.example.g")
        let collection = try #require(try store.collections().first)
        let collectionValues = try #require(
            try database.rows("SELECT \(Store.CollectionRecord.columns.list()) FROM collections").first)
        #expect(Store.CollectionRecord(Row(collectionValues, Store.CollectionRecord.columns)) == collection)
    }

    @Test("statements built from column lists name the columns given, in the order given")
    func builtStatements() throws {
        let (_, database) = try freshDatabase()
        #expect(Query(Store.ItemRecord.columns, qualifiedBy: "i", "FROM items i").sql
                == "SELECT i.id, i.collection_id, i.created, i.modified, i.access_group, i.survives_lock FROM items i")
        // An alias written by column, read back by hand.
        try database.insert([AliasColumn.collectionID: .integer(1), .alias: .text("other")])
        try database.insert([AliasColumn.alias: .text("other"), .collectionID: .integer(1)], onConflict: .ignore)
        #expect(throws: StoreError.self) { try database.insert([AliasColumn.alias: .text("other"), .collectionID: .integer(1)]) }
        try database.update([CollectionColumn.label: .text("Renamed"), .modified: .integer(7)], where: .id, is: .integer(1))
        #expect(try database.rows("SELECT alias, collection_id FROM aliases ORDER BY alias")
                == [[.text("default"), .integer(1)], [.text("other"), .integer(1)]])
        #expect(try database.rows("SELECT label, modified FROM collections") == [[.text("Renamed"), .integer(7)]])
        // The same shape twice is one statement text, built once.
        let built = database.builtStatements.count
        try database.update([CollectionColumn.label: .text("Again"), .modified: .integer(8)], where: .id, is: .integer(1))
        #expect(database.builtStatements.count == built)
    }
}
