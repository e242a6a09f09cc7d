import Foundation

/// One parser of outside input under test: it takes one input's bytes and traps (through
/// ``require(_:_:)``) when the parser crashes or a property it promises fails. Rejecting an
/// input with an error is fine.
struct FuzzTarget: Sendable {
    /// The name on the command line and of the corpus directory (`fuzz/corpus/<name>`).
    let name: String
    /// What it feeds the input to.
    let summary: String
    /// The largest input worth trying (libFuzzer's `-max_len`).
    let maximumLength: Int
    /// Runs one input.
    let run: @Sendable (Data) -> Void
    /// Seeds that need the code to make them (sealed or encrypted inputs), by file name;
    /// `keychain-fuzz TARGET --write-seeds DIRECTORY` writes them into the corpus.
    var generatedSeeds: @Sendable () -> [(name: String, data: Data)] = { [] }

    /// Every target, in the order `make fuzz` runs them.
    static let all: [FuzzTarget] = [
        KWalletTarget.target,
        GitCredentialTarget.target, AccessPolicyTarget.target, ExportFileTarget.target, CSVImportTarget.target,
        ConfigurationTarget.target, SessionTarget.target, StoredItemTarget.target, LoginControlTarget.target,
        GnomeKeyringTarget.target, TPMSlotTarget.target, SyncFileTarget.target, PasswordManagerImportTarget.target,
        KDBXImportTarget.target, SSHAgentTarget.target, PackedItemsTarget.target,
    ]

    /// The target called `name`, if any.
    static func named(_ name: String) -> FuzzTarget? { all.first { $0.name == name } }
}

/// Traps with `message` when `condition` is false: a property of a parser failed.
func require(_ condition: Bool, _ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) {
    if !condition { fatalError("property failed: \(message())", file: file, line: line) }
}
