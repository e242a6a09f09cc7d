import Foundation
import Testing

@testable import SecretCtl

/// Each verb is one type in one file, listed once in `SecretCtl.verbs`, and the dispatcher
/// reaches it by its name.
@Suite struct VerbTests {
    static let commandsDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources/SecretCtl/Commands")

    static var secretctl: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("secretctl").path
    }

    /// `git-credential` is `GitCredentialCommand`.
    static func typeName(of verb: String) -> String {
        verb.split(separator: "-").map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined() + "Command"
    }

    @Test("every verb is listed once, and is the type named after it in Commands/<Type>.swift")
    func oneTypeOneFile() throws {
        let names = SecretCtl.verbs.map { $0.spec.name }
        #expect(Set(names).count == names.count, "\(names)")
        #expect(Set(SecretCtl.verbs.map { ObjectIdentifier($0) }).count == SecretCtl.verbs.count)
        #expect(SecretCtl.commands.map(\.name) == names)  // help order is the list's order
        for verb in SecretCtl.verbs {
            let type = String(describing: verb)
            #expect(type == Self.typeName(of: verb.spec.name))
            let file = Self.commandsDirectory.appendingPathComponent("\(type).swift")
            let text = try String(contentsOf: file, encoding: .utf8)
            #expect(text.components(separatedBy: ": Verb {").count == 2, "\(file.lastPathComponent) declares one verb")
            #expect(text.contains("enum \(type): Verb {"), "\(file.lastPathComponent)")
            #expect(text.contains("name: \"\(verb.spec.name)\""), "\(file.lastPathComponent) declares its spec")
        }
        // And no verb file is missing from the list.
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.commandsDirectory.path)
        for file in files where try String(contentsOf: Self.commandsDirectory.appendingPathComponent(file), encoding: .utf8)
            .contains(": Verb {")
        {
            #expect(SecretCtl.verbs.contains { "\($0).swift" == file }, "\(file) is not in SecretCtl.verbs")
        }
    }

    @Test("the dispatcher finds each verb by its name, and nothing else")
    func lookup() throws {
        for verb in SecretCtl.verbs {
            let found = try #require(SecretCtl.verb(named: verb.spec.name))
            #expect(ObjectIdentifier(found) == ObjectIdentifier(verb))
        }
        #expect(SecretCtl.verb(named: "frobnicate") == nil)
        #expect(SecretCtl.verb(named: "") == nil)
    }

    @Test("secretctl VERB --help shows the verb's usage, without a provider", arguments: SecretCtl.commands.map(\.name))
    func help(verb: String) throws {
        let spec = try #require(SecretCtl.verb(named: verb)?.spec)
        let result = try Self.run([verb, "--help"])
        #expect(result.status == 0, "\(result.errorOutput)")
        #expect(result.output.hasPrefix("OVERVIEW: \(spec.abstract)\n\nUSAGE: \(spec.usage)\n"), "\(result.output)")
        #expect(result.errorOutput.isEmpty)
    }

    @Test("dispatch hands the words to the verb's own parser", arguments: SecretCtl.commands.map(\.name))
    func dispatch(verb: String) throws {
        let result = try Self.run([verb, "--no-such-option"])
        #expect(result.status == 2)
        #expect(result.errorOutput.hasSuffix("\nSee 'secretctl \(verb) --help'.\n"), "\(result.errorOutput)")
    }

    /// Runs the built secretctl with no provider to reach (help and usage errors need none).
    static func run(_ arguments: [String]) throws -> (status: Int32, output: String, errorOutput: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: secretctl)
        process.arguments = arguments
        process.environment = ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/bus", "PATH": "/usr/bin:/bin"]
        let output = Pipe()
        let errorOutput = Pipe()
        process.standardOutput = output
        process.standardError = errorOutput
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = errorOutput.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
    }
}
