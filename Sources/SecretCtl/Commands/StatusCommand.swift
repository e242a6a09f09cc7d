import FoundationEssentials
import Keychain
import KeychainCore

/// `secretctl status`: the provider that owns the Secret Service name, and its keyrings;
/// exit status 5 when there is none.
enum StatusCommand: Verb {
    static let spec = CommandSpec(
        name: "status", abstract: "Show the provider on the bus and its keyrings (exit 5 when there is none).",
        arguments: [], options: [Common.json], examples: ["secretctl status"])

    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        let owner = try CommandLineError.keychain { () throws(KeychainError) in try KeychainProvider.owner() }
        let collections = try CommandLineError.keychain { () throws(KeychainError) in try KeychainProvider.collections() }
        let command = owner.pid.flatMap { try? String(contentsOfFile: "/proc/\($0)/comm", encoding: .utf8) }?
            .trimmingWhitespace
        if parsed[Common.json] {
            try Output.json([
                "provider": ["name": owner.name, "pid": owner.pid.map { Int($0) }, "command": command] as [String: Any?],
                "collections": collections.map {
                    ["path": $0.path, "label": $0.label, "locked": $0.isLocked, "items": $0.itemCount] as [String: Any?]
                },
            ] as [String: Any?])
        } else {
            let process = [owner.pid.map { "pid \($0)" }, command].compactMap { $0 }.joined(separator: ", ")
            Terminal.writeOutput("provider: \(owner.name)\(process.isEmpty ? "" : " (\(process))")\n")
            for collection in collections {
                let state = collection.isLocked ? "locked" : "unlocked"
                Terminal.writeOutput("\(collection.label)\t\(collection.path)\t\(state)\t\(collection.itemCount) items\n")
            }
        }
    }
}
