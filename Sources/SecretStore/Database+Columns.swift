// Reads and writes by column: SELECT lists from a Selection, INSERT and UPDATE lists from the
// columns given values, so no statement in Store spells a table's columns by hand and no
// decoder counts positions. No SQLite call here: the statements run through SQLite.swift.

/// A SELECT whose rows decode by column name: its list is a ``Selection``, and the rest of
/// the statement (`FROM …`, joins, `WHERE`, `ORDER BY`) is written out.
struct Query<Column: TableColumn>: Sendable {
    /// The columns it reads.
    let selection: Selection<Column>
    /// The whole statement (a caller may append conditions).
    var sql: String

    /// `SELECT <selection> <rest>`; `alias` qualifies the columns (`i.id`) for a join.
    init(_ selection: Selection<Column>, qualifiedBy alias: String? = nil, _ rest: String) {
        self.selection = selection
        sql = "SELECT \(selection.list(qualifiedBy: alias)) \(rest)"
    }
}

/// What an INSERT does when the row's key is already taken.
enum ConflictResolution: UInt64 {
    /// Fail with a constraint error (SQLite's default).
    case abort = 1
    /// Delete the row in the way first.
    case replace = 2
    /// Leave the existing row and insert nothing.
    case ignore = 3

    /// The statement's verb.
    var verb: String {
        switch self {
        case .abort: "INSERT"
        case .replace: "INSERT OR REPLACE"
        case .ignore: "INSERT OR IGNORE"
        }
    }
}

/// What the text of a built INSERT or UPDATE depends on (its table, kind and columns), to find
/// it in ``Database/builtStatements``: building the text for every write cost more
/// instructions than the write's own statements, and a shape of two words is cheap to compare.
struct StatementShape: Equatable {
    /// The column type, which names the table.
    private let table: ObjectIdentifier
    /// The kind (0 for an UPDATE, else the ``ConflictResolution``) in the low 2 bits, then
    /// 5 bits per column: its raw value + 1, in statement order.
    private let code: UInt64

    /// The shape of a statement of `kind` over `columns`, then `key` (an UPDATE's); nil when
    /// they do not fit in the code (more than 12, or a raw value above 30), and such a
    /// statement is built every time.
    init?<Column: TableColumn>(kind: UInt64, _ columns: some Sequence<Column>, key: Column? = nil) {
        var code = kind
        var shift: UInt64 = 2
        func add(_ column: Column) -> Bool {
            guard shift <= 64 - 5, column.rawValue < 31 else { return false }
            code |= UInt64(column.rawValue + 1) << shift
            shift += 5
            return true
        }
        for column in columns where !add(column) { return nil }
        if let key, !add(key) { return nil }
        table = ObjectIdentifier(Column.self)
        self.code = code
    }
}

extension Database {
    /// The rows of `query`, each decoded by `decode` while it is current.
    func rows<Column, Decoded>(
        _ query: Query<Column>, _ values: [Value] = [], _ decode: (Row<Column>) -> Decoded
    ) throws(StoreError) -> [Decoded] {
        try withQuery(query.sql, values) { (statement) throws(StoreError) in
            Self.check(statement, reads: query.selection)
            var decoded: [Decoded] = []
            while try statement.step() { decoded.append(decode(Row(statement, query.selection))) }
            return decoded
        }
    }

    /// The first row of `query`, decoded by `decode`, or nil when there is none.
    func firstRow<Column, Decoded>(
        _ query: Query<Column>, _ values: [Value] = [], _ decode: (Row<Column>) -> Decoded
    ) throws(StoreError) -> Decoded? {
        try withQuery(query.sql, values) { (statement) throws(StoreError) in
            Self.check(statement, reads: query.selection)
            return try statement.step() ? decode(Row(statement, query.selection)) : nil
        }
    }

    /// Traps unless `statement` returns the selection's columns (a query whose text does not
    /// start with the selection's list).
    private static func check<Column>(_ statement: Statement, reads selection: Selection<Column>) {
        precondition(
            statement.columnCount == selection.columns.count,
            "a query of \(Column.table) returns \(statement.columnCount) columns, not the \(selection.columns.count) it selects")
    }

    /// Inserts a row into `Column`'s table, each value under the column it is paired with.
    func insert<Column: TableColumn>(
        _ row: KeyValuePairs<Column, Value>, onConflict conflict: ConflictResolution = .abort
    ) throws(StoreError) {
        let sql = statementText(StatementShape(kind: conflict.rawValue, row.lazy.map { $0.key })) {
            let names = row.map { $0.key.name }.joined(separator: ", ")
            let placeholders = Array(repeating: "?", count: row.count).joined(separator: ", ")
            return "\(conflict.verb) INTO \(Column.table) (\(names)) VALUES (\(placeholders))"
        }
        try run(sql, row.map { $0.value })
    }

    /// Sets columns of the row of `Column`'s table whose `key` column is `keyValue`, each
    /// value under the column it is paired with.
    func update<Column: TableColumn>(
        _ changes: KeyValuePairs<Column, Value>, where key: Column, is keyValue: Value
    ) throws(StoreError) {
        let sql = statementText(StatementShape(kind: 0, changes.lazy.map { $0.key }, key: key)) {
            let assignments = changes.map { "\($0.key.name) = ?" }.joined(separator: ", ")
            return "UPDATE \(Column.table) SET \(assignments) WHERE \(key.name) = ?"
        }
        var values: [Value] = []
        values.reserveCapacity(changes.count + 1)
        for (_, value) in changes { values.append(value) }
        values.append(keyValue)
        try run(sql, values)
    }

    /// The text of the statement of `shape`, built by `build` the first time only.
    private func statementText(_ shape: StatementShape?, _ build: () -> String) -> String {
        guard let shape else { return build() }
        if let built = builtStatements.first(where: { $0.shape == shape }) { return built.sql }
        let built = build()
        builtStatements.append((shape, built))
        return built
    }
}
