// A row decoded by column name: where each column sits in it is worked out once per selection,
// and its values are read straight from the statement.

/// One row read with a ``Selection``: its values by column, whatever their order in the SELECT.
///
/// A row of a query reads its values straight from the statement, while it is current: it is
/// valid only inside the closure it is handed to (``Database/rows(_:_:_:)``,
/// ``Database/firstRow(_:_:_:)``).
package struct Row<Column: TableColumn> {
    private enum Source {
        /// The current row of a statement.
        case statement(Database.Statement)
        /// Values, in the order of the selection.
        case values([Database.Value])
    }

    private let source: Source
    private let selection: Selection<Column>

    /// The current row of `statement`, a query of `selection`.
    init(_ statement: Database.Statement, _ selection: Selection<Column>) {
        source = .statement(statement)
        self.selection = selection
    }

    /// The row whose values are `values`, in the order of `selection` (for the fuzz target).
    package init(_ values: [Database.Value], _ selection: Selection<Column>) {
        precondition(values.count == selection.columns.count, "a row of \(Column.table) has the wrong number of values")
        source = .values(values)
        self.selection = selection
    }

    /// The value of `column`, which must be one of the selection's.
    subscript(column: Column) -> Database.Value {
        let position = selection.position(of: column)
        switch source {
        case .statement(let statement): return statement.value(at: position)
        case .values(let values): return values[position]
        }
    }

    /// The value of `column` if it is an integer.
    func integer(_ column: Column) -> Int64? { self[column].integer }
    /// The value of `column` if it is text.
    func text(_ column: Column) -> String? { self[column].text }
    /// The bytes of `column` if it is a blob (or text).
    func blob(_ column: Column) -> [UInt8]? { self[column].blob }
}
