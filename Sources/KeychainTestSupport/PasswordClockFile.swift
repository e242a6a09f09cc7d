public import Foundation
import KeychainCore

/// The offset file of a debug secretd's password clock (see `PasswordClock` in secretd): a
/// test advances it to step over the wait after a wrong password instead of sleeping it out.
public final class PasswordClockFile: @unchecked Sendable {
    /// The file secretd reads, named in its environment by ``environment``.
    public let url: URL
    private var seconds = 0.0
    private let lock = NSLock()

    /// An offset file of 0 s in `directory`.
    init(in directory: URL) throws {
        url = directory.appendingPathComponent("password-clock-offset")
        try "0\n".write(to: url, atomically: true, encoding: .utf8)
    }

    /// The variable that points secretd at this file.
    public var environment: [String: String] { [TestHooks.passwordClockOffsetFile: url.path] }

    /// Moves secretd's password clock `seconds` forward, so a wait after a wrong password ends
    /// that much sooner. Other clocks (idle lock, timestamps) do not move.
    public func advance(by seconds: Double) throws {
        try lock.withLock {
            self.seconds += seconds
            try "\(self.seconds)\n".write(to: url, atomically: true, encoding: .utf8)
        }
    }
}
