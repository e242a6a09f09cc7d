// keychain-fuzz TARGET [FILE|DIRECTORY ...]
// keychain-fuzz TARGET --write-seeds DIRECTORY
// keychain-fuzz --list
//
// Normal builds replay each input once through TARGET (the regression test for the committed
// corpus and crashers). The fuzz build (`make fuzz`: -DKEYCHAIN_FUZZING, coverage and address
// sanitizer, linked with libFuzzer) hands everything after TARGET to libFuzzer instead.

import Foundation

let arguments = CommandLine.arguments
#if KEYCHAIN_FUZZING
// libFuzzer starts this program again for -merge, -fork and -minimize_crash, with its own
// options only: FuzzDriver names the target in the environment for those runs.
if let name = ProcessInfo.processInfo.environment[FuzzDriver.targetVariable], let target = FuzzTarget.named(name),
    arguments.count < 2 || FuzzTarget.named(arguments[1]) == nil
{
    exit(FuzzDriver.run(target, options: Array(arguments.dropFirst())))
}
#endif
if arguments.count == 2, arguments[1] == "--list" {
    for target in FuzzTarget.all { print("\(target.name)\t\(target.maximumLength)\t\(target.summary)") }
    exit(0)
}
guard arguments.count >= 2, let target = FuzzTarget.named(arguments[1]) else {
    let names = FuzzTarget.all.map(\.name).joined(separator: ", ")
    FileHandle.standardError.write(Data("usage: keychain-fuzz TARGET [FILE|DIRECTORY ...] | TARGET --write-seeds DIRECTORY | --list\ntargets: \(names)\n".utf8))
    exit(2)
}

if arguments.count == 4, arguments[2] == "--write-seeds" {
    for seed in target.generatedSeeds() {
        let url = URL(fileURLWithPath: arguments[3]).appendingPathComponent(seed.name)
        guard FileManager.default.createFile(atPath: url.path, contents: seed.data) else {
            FileHandle.standardError.write(Data("keychain-fuzz: cannot write \(url.path)\n".utf8))
            exit(1)
        }
    }
    exit(0)
}

#if KEYCHAIN_FUZZING
exit(FuzzDriver.run(target, options: Array(arguments.dropFirst(2))))
#else
exit(Replay.run(target, paths: Array(arguments.dropFirst(2))))
#endif
