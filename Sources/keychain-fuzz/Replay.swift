import Foundation
import KeychainCore

/// Replays saved inputs once each through a target: the committed corpus and crashers, in
/// every normal build.
enum Replay {
    /// The most memory replaying may take: an input that makes a parser allocate more (as a
    /// hostile export header once made the key derivation take 2 GiB) fails, as under
    /// libFuzzer's `-rss_limit_mb`. The largest legitimate key derivation takes 256 MiB.
    static let memoryLimitMiB = 512

    /// Runs every file in `paths` (files, or directories whose files are read, hidden ones
    /// skipped) through `target`; returns the exit status. A failing property traps, so a
    /// regression ends the process; the line printed before it names the input.
    static func run(_ target: FuzzTarget, paths: [String]) -> Int32 {
        var count = 0
        for path in paths {
            guard let files = inputs(at: path) else {
                FileHandle.standardError.write(Data("keychain-fuzz: cannot read \(path)\n".utf8))
                return 1
            }
            for file in files {
                guard let data = FileManager.default.contents(atPath: file) else {
                    FileHandle.standardError.write(Data("keychain-fuzz: cannot read \(file)\n".utf8))
                    return 1
                }
                FileHandle.standardOutput.write(Data("\(target.name): \(file)\n".utf8))  // unbuffered: named before a trap
                target.run(data)
                count += 1
                let peak = peakMemoryMiB()
                if peak > memoryLimitMiB {
                    FileHandle.standardError.write(Data(
                        "keychain-fuzz: \(file) took \(peak) MiB of memory (the limit is \(memoryLimitMiB) MiB)\n".utf8))
                    return 1
                }
            }
        }
        FileHandle.standardOutput.write(Data("\(target.name): \(count) inputs replayed, no failure\n".utf8))
        return 0
    }

    /// This program's peak resident memory so far: the kernel's high-water mark of its own
    /// address space (`VmHWM`), not `getrusage`'s `ru_maxrss`, which Linux keeps across `execve`
    /// and so starts at the peak of the process that spawned this one (a test runner grown past
    /// the limit failed every first input). 0 when /proc cannot be read.
    private static func peakMemoryMiB() -> Int {
        (ProcessStatus.kibibytes("VmHWM") ?? 0) / 1024
    }

    /// `path` itself when it is a file, its non-hidden files (sorted) when it is a directory
    /// (a missing directory has none); nil when it cannot be read.
    private static func inputs(at path: String) -> [String]? {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { return nil }
        guard isDirectory.boolValue else { return [path] }
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: path) else { return nil }
        return names.filter { !$0.hasPrefix(".") }.sorted().map { "\(path)/\($0)" }
    }
}
