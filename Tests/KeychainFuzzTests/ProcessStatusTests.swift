import Foundation
import KeychainCore
import KeychainTestSupport
import Testing

/// `/proc/<pid>/status` read a field at a time, as the fuzz replay's memory limit, the bench's
/// memory readings and the run scopes' ancestry read it.
@Suite struct ProcessStatusTests {
    @Test("this process's fields read as the kernel reports them")
    func ownFields() throws {
        #expect(ProcessStatus.value("PPid").flatMap { Int32($0) } == getppid())
        #expect(ProcessStatus.value("Pid", of: getpid()).flatMap { Int32($0) } == getpid())
        let resident = try #require(ProcessStatus.kibibytes("VmRSS"))
        let peak = try #require(ProcessStatus.kibibytes("VmHWM"))
        #expect(resident > 1024)
        #expect(peak >= resident)
    }

    @Test("a missing field or a gone process reads as nil")
    func missing() {
        #expect(ProcessStatus.value("NoSuchField") == nil)
        #expect(ProcessStatus.kibibytes("Name") == nil)
        #expect(ProcessStatus.value("Pid", of: Int32.max) == nil)
    }

    @Test("the replay's limit counts the replay's own memory, not its parent's")
    func replayUnderALargeParent() throws {
        // Linux keeps ru_maxrss across execve: a replay exec'd from a process of 600 MiB once
        // failed its first input at the parent's size.
        let script = """
            import os, sys
            block = bytearray(600 << 20)
            for i in range(0, len(block), 4096): block[i] = 1
            os.execv(sys.argv[1], sys.argv[1:])
            """
        let result = try CommandResult.run(
            ["python3", "-c", script, ReplayTests.program, "config", ReplayTests.fuzzDirectory.appendingPathComponent("corpus/config").path],
            environment: ["SWIFT_BACKTRACE": "enable=no"], scratch: FileManager.default.temporaryDirectory, timeout: 120)
        #expect(result.status == 0, "\(result.text.suffix(300))\(result.errorOutput)")
        #expect(result.text.contains("inputs replayed, no failure"))
    }
}
