import Foundation
import Testing

@testable import SecretCtl

@Suite struct CompletionsTests {
    @Test("every script names every verb and option", arguments: ["bash", "zsh", "fish"])
    func coverage(shell: String) throws {
        let script = try #require(Completions.script(for: shell, SecretCtl.commands))
        for spec in SecretCtl.commands {
            #expect(script.contains(spec.name))
            for option in spec.options {
                #expect(script.contains(shell == "fish" ? "-l \(option.name)" : "--\(option.name)"))
            }
        }
        #expect(Completions.script(for: "tcsh", SecretCtl.commands) == nil)
    }

    @Test("the bash script parses and completes verbs and options")
    func bash() throws {
        let script = try #require(Completions.script(for: "bash", SecretCtl.commands))
        let driver = script + """
            COMP_WORDS=(secretctl se); COMP_CWORD=1; _secretctl; echo "${COMPREPLY[*]}"
            COMP_WORDS=(secretctl get --j); COMP_CWORD=2; _secretctl; echo "${COMPREPLY[*]}"
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = ["-c", driver]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(text == "set search setup\n--json\n")
    }
}
