import Foundation
import KeychainTestSupport
import Testing

/// The committed fuzz corpus and every crasher fuzzing found, replayed through the normal
/// build of `keychain-fuzz` (`make fuzz` runs the fuzzer itself).
@Suite struct ReplayTests {
    /// The package's `fuzz/` directory.
    static let fuzzDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("fuzz")
    /// The fuzz program, built next to the test bundle.
    static let program = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        .appendingPathComponent("keychain-fuzz").path

    /// The targets `keychain-fuzz --list` names.
    static let targets: [String] = {
        let scratch = FileManager.default.temporaryDirectory
        guard let result = try? CommandResult.run([program, "--list"], environment: [:], scratch: scratch), result.status == 0
        else { return ["keychain-fuzz --list failed"] }
        return result.text.split(separator: "\n").map { String($0.split(separator: "\t")[0]) }
    }()

    @Test("each target replays its corpus and its regressions without a failure", arguments: targets)
    func replay(target: String) throws {
        let corpus = Self.fuzzDirectory.appendingPathComponent("corpus/\(target)").path
        let regressions = Self.fuzzDirectory.appendingPathComponent("regressions/\(target)").path
        let seeds = try FileManager.default.contentsOfDirectory(atPath: corpus).filter { !$0.hasPrefix(".") }
        #expect(!seeds.isEmpty, "fuzz/corpus/\(target) has no seeds")
        #expect(seeds.count < 200, "fuzz/corpus/\(target) should stay small (minimize it with -merge=1)")
        let result = try CommandResult.run(
            [Self.program, target, corpus, regressions], environment: ["SWIFT_BACKTRACE": "enable=no"],
            scratch: FileManager.default.temporaryDirectory, timeout: 300)
        #expect(result.status == 0, "\(result.text.split(separator: "\n").suffix(3).joined(separator: "\n"))\n\(result.errorOutput)")
        #expect(result.text.contains("inputs replayed, no failure"))
    }
}
