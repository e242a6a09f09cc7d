// A table's columns as an enum (Schema.swift declares one per table), and selections of them,
// from which every SELECT, INSERT and UPDATE list is built (Database+Columns.swift).

/// The columns of one table, as an enum whose cases are the columns in table order (see
/// Schema.swift). The raw values must be 0, 1, 2, … in case order: a row finds a column's
/// value through them without hashing (a test checks).
package protocol TableColumn: RawRepresentable<Int>, CaseIterable, Hashable, Sendable where AllCases == [Self] {
    /// The table's name.
    static var table: String { get }
    /// The column's name and declared SQL type, as `PRAGMA table_info` reports them.
    var definition: (name: String, type: String) { get }
}

extension TableColumn {
    /// The column's name.
    var name: String { definition.name }
}

/// Some columns of a table, in the order a SELECT lists them. Where each one sits is worked
/// out once, here, not per row.
package final class Selection<Column: TableColumn>: Sendable {
    /// The columns, in SELECT order.
    package let columns: [Column]
    /// Each column's position in ``columns`` by raw value, or -1 when it is not selected.
    private let positions: [Int]

    /// A selection of `columns`, which must be distinct.
    init(_ columns: [Column]) {
        var positions = [Int](repeating: -1, count: Column.allCases.count)
        for (position, column) in columns.enumerated() {
            precondition(positions[column.rawValue] < 0, "\(Column.table).\(column.name) is selected twice")
            positions[column.rawValue] = position
        }
        self.columns = columns
        self.positions = positions
    }

    /// Every column of the table except `excluded`.
    convenience init(allBut excluded: [Column]) {
        self.init(Column.allCases.filter { !excluded.contains($0) })
    }

    /// The SELECT list: the columns' names, each qualified by `alias` when one is given.
    func list(qualifiedBy alias: String? = nil) -> String {
        let prefix = alias.map { "\($0)." } ?? ""
        return columns.map { prefix + $0.name }.joined(separator: ", ")
    }

    /// Where `column` sits in a row of this selection.
    func position(of column: Column) -> Int {
        let position = positions[column.rawValue]
        precondition(position >= 0, "\(Column.table).\(column.name) is not among the columns this row was read with")
        return position
    }
}
