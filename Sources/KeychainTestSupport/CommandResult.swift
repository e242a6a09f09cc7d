public import Foundation

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
}
