#if KEYCHAIN_FUZZING
import CFuzzer
import Foundation

/// Runs libFuzzer on one target (fuzz build only). libFuzzer's own `main` is not linked
/// (`libclang_rt.fuzzer_no_main`), so this program keeps its `main` and passes the command
/// line after the target name to `LLVMFuzzerRunDriver`, options and corpus directories alike.
enum FuzzDriver {
    /// The target the C callback runs; set once, before libFuzzer starts.
    nonisolated(unsafe) private static var current: FuzzTarget?

    /// Fuzzes `target` until libFuzzer stops; returns libFuzzer's exit status.
    static func run(_ target: FuzzTarget) -> Int32 {
        current = target
        // argv without the target name: libFuzzer reads argv[0] (to re-run itself) and options.
        let kept = [CommandLine.arguments[0]] + CommandLine.arguments.dropFirst(2)
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
