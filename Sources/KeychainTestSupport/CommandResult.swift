public import Foundation
import Glibc

/// The outcome of a client command run by ``TestEnvironment/run(_:input:environment:)``.
public struct CommandResult: Sendable {
    /// The exit status (or 128 + signal).
    public var status: Int32
    /// Everything written to standard output.
    public var output: Data
    /// Everything written to standard error, as text.
    public var errorOutput: String

    /// Standard output as text.
    public var text: String { String(decoding: output, as: UTF8.self) }

    /// Runs `arguments` (argv[0] looked up in `PATH`) with exactly `environment`, feeding it
    /// `input`, with its output collected in files under `scratch`; kills it after `timeout`
    /// seconds so a hang fails instead of blocking.
    public static func run(
        _ arguments: [String], input: Data? = nil, environment: [String: String], scratch: URL, timeout: Double = 60
    ) throws -> CommandResult {
        let id = UUID().uuidString
        let outPath = scratch.appendingPathComponent("cmd-\(id).out").path
        let errPath = scratch.appendingPathComponent("cmd-\(id).err").path
        defer {
            unlink(outPath)
            unlink(errPath)
        }
        let output = try Subprocess.openForWriting(outPath)
        let errorOutput = try Subprocess.openForWriting(errPath)
        let pipe = try Subprocess.pipe()
        let process = try Subprocess(arguments, environment: environment, input: pipe.read, output: output, error: errorOutput)
        close(pipe.read)
        close(output)
        close(errorOutput)
        Subprocess.writeAndClose(pipe.write, Array(input ?? Data()))
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning {
            if Date() > deadline {
                process.send(SIGKILL)
                process.waitForExit()
                throw HarnessError("\(arguments.joined(separator: " ")) did not finish within \(Int(timeout)) s")
            }
            usleep(5_000)
        }
        return CommandResult(
            status: process.waitForExit(), output: FileManager.default.contents(atPath: outPath) ?? Data(),
            errorOutput: String(decoding: FileManager.default.contents(atPath: errPath) ?? Data(), as: UTF8.self))
    }
}
