import Foundation
import Testing

@testable import SecretCtl

/// How `secretctl import FILE` cuts a file into the batches it sends to secretd, and what its
/// progress bar shows (issue 51, point 6).
@Suite struct BulkImportTests {
    static func item(_ index: Int, secretBytes: Int = 20) -> ExportFile.Item {
        ExportFile.Item(
            label: "site \(index)", attributes: ["server": "host\(index).example.com", "user": "user\(index)"],
            secret: Data(repeating: 0x61, count: secretBytes))
    }

    @Test("batches of a thousand items, the last one shorter, every item once and in order")
    func batchesByCount() {
        let items = (0..<2_500).map { Self.item($0) }
        let batches = ImportCommand.batches(items)
        #expect(batches == [0..<1_000, 1_000..<2_000, 2_000..<2_500])
        #expect(ImportCommand.batches([]) == [])
        #expect(ImportCommand.batches([Self.item(0)]) == [0..<1])
    }

    @Test("a batch stops before its items pass 4 MiB, and one larger item goes alone")
    func batchesByBytes() {
        let items = (0..<10).map { Self.item($0, secretBytes: 1 << 20) } + [Self.item(10, secretBytes: 5 << 20)]
        let batches = ImportCommand.batches(items)
        #expect(batches.allSatisfy { $0.count <= 4 })
        #expect(batches.last == 10..<11)
        #expect(batches.flatMap { Array($0) } == Array(0..<11))
    }

    @Test("the progress line holds counts only")
    func progressLine() {
        #expect(ProgressBar.line("importing", done: 25_000, total: 100_000, width: 20)
            == "importing [#####---------------] 25% 25000/100000 items")
        #expect(ProgressBar.line("reading", done: 7, total: 7, width: 4) == "reading [####] 100% 7/7 items")
    }

    @Test("no progress bar without a terminal on standard error, nor for a few items")
    func noBarWhenPiped() {
        // The tests' standard error is a pipe or a file, not a terminal.
        if isatty(STDERR_FILENO) == 0 { #expect(ProgressBar("importing", total: 100_000) == nil) }
        #expect(ProgressBar("importing", total: 10) == nil)
    }
}
