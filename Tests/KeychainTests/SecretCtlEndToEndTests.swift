import Foundation
import KeychainTestSupport
import Testing

@testable import Keychain

extension ProviderTests {
    /// secretctl as a user runs it, against the provider of this run.
    @Suite struct SecretCtlEndToEnd {
        init() throws { _ = try environment() }

        static var secretctl: String {
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("secretctl").path
        }

        func run(_ arguments: [String], input: String? = nil, environment extra: [String: String] = [:]) throws -> CommandResult {
            try environment().run([Self.secretctl] + arguments, input: input.map { Data($0.utf8) }, environment: extra)
        }

        @Test("set, get, show, list, delete: a transcript")
        func transcript() throws {
            let service = uniqueService() + ".ünïcødé"
            #expect(try run(["set", "--label", "Mail ✓", "--comment", "work", service, "alice"], input: "s3cr3t ✓").status == 0)
            let get = try run(["get", service, "alice"])
            #expect(get.status == 0)
            #expect(get.text == "s3cr3t ✓")  // no newline: stdout is not a terminal
            let json = try run(["get", "--json", service, "alice"])
            #expect(json.text == "{\"account\":\"alice\",\"secret\":\"s3cr3t ✓\",\"service\":\"\(service)\"}\n")
            let show = try run(["show", service, "alice"])
            #expect(show.text.contains("label: Mail ✓\n"))
            #expect(show.text.contains("comment: work\n"))
            #expect(!show.text.contains("s3cr3t"))
            #expect(try run(["show", "--reveal", service, "alice"]).text.contains("secret: s3cr3t ✓\n"))
            #expect(try run(["list", service]).text == "\(service)\talice\tMail ✓\n")
            let listed = try JSONSerialization.jsonObject(with: try run(["list", "--json", service]).output) as? [[String: Any]]
            #expect(listed?.first?["account"] as? String == "alice")
            #expect(listed?.first?["comment"] as? String == "work")
            // The library sees the same item.
            #expect(try Keychain.password(service: service, account: "alice") == "s3cr3t ✓")
            #expect(try run(["delete", service, "alice"]).status == 0)
            #expect(try run(["delete", service, "alice"]).status == 1)
        }

        @Test("binary secrets survive stdin and stdout byte for byte; --json gives base64")
        func binary() throws {
            let service = uniqueService()
            let bytes = Data([0, 1, 2, 0xff, 0, 0x80, 10, 13, 0])
            let stored = try environment().run([Self.secretctl, "set", service, "blob"], input: bytes)
            #expect(stored.status == 0, "\(stored.errorOutput)")
            #expect(try run(["get", service, "blob"]).output == bytes)
            #expect(try run(["get", "--json", service, "blob"]).text.contains("{\"base64\":\"\(bytes.base64EncodedString())\"}"))
        }

        @Test("exit statuses: not found 1, usage 2, no provider 5; a secret as an argument is refused")
        func exitStatuses() throws {
            let service = uniqueService()
            let missing = try run(["get", service, "nobody"])
            #expect(missing.status == 1)
            #expect(missing.errorOutput == "secretctl: no secret for service '\(service)', account 'nobody'\n")
            let onArgv = try run(["set", service, "alice", "hunter2"])
            #expect(onArgv.status == 2)
            #expect(onArgv.errorOutput.contains("pipe it instead"))
            #expect(!onArgv.errorOutput.contains("hunter2"))
            #expect(try run(["get", service]).status == 2)
            #expect(try run(["frobnicate"]).status == 2)
            let noBus = try run(["get", service, "alice"], environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/bus"])
            #expect(noBus.status == 5)
            #expect(noBus.errorOutput.hasPrefix("secretctl: no Secret Service provider"))
        }
    }
}
