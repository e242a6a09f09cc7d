#if KEYCHAIN_FUZZING
import CFuzzer
import Foundation

/// Runs libFuzzer on one target (fuzz build only). libFuzzer's own `main` is not linked
/// (`libclang_rt.fuzzer_no_main`), so this program keeps its `main` and passes the command
/// line after the target name to `LLVMFuzzerRunDriver`, options and corpus directories alike.
enum FuzzDriver {
    /// The environment variable that names the target for the runs libFuzzer starts itself
    /// (`-merge`, `-fork`, `-minimize_crash`), whose command lines do not.
    static let targetVariable = "KEYCHAIN_FUZZ_TARGET"

    /// The target the C callback runs; set once, before libFuzzer starts.
    nonisolated(unsafe) private static var current: FuzzTarget?

    /// Fuzzes `target` with libFuzzer's `options` (flags, corpus directories, inputs) until
    /// libFuzzer stops; returns libFuzzer's exit status.
    static func run(_ target: FuzzTarget, options: [String]) -> Int32 {
        current = target
        setenv(targetVariable, target.name, 1)
        // libFuzzer reads argv[0] (to start itself again) and its options.
        let kept = [CommandLine.arguments[0]] + options
        var pointers: [UnsafeMutablePointer<CChar>?] = kept.map { strdup($0) } + [nil]
        var count = Int32(kept.count)
        return pointers.withUnsafeMutableBufferPointer { buffer in
            var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = buffer.baseAddress
            return LLVMFuzzerRunDriver(&count, &argv) { data, size in
                let input = size == 0 ? Data() : Data(bytes: data!, count: size)
                FuzzDriver.current!.run(input)
                return 0
            }
        }
    }
}
#endif
