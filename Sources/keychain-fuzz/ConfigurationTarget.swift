import Foundation
import SecretService

/// `secretd.conf`.
enum ConfigurationTarget {
    /// The target.
    static let target = FuzzTarget(name: "config", summary: "secretd.conf", maximumLength: 2048, run: run)

    private static func run(_ data: Data) {
        // As Configuration.load reads it: UTF-8 text, or refused.
        guard let text = String(data: data, encoding: .utf8) else { return }
        do {
            let configuration = try Configuration.parse(text, file: "secretd.conf")
            require(configuration.lockAfterIdle >= 0, "a negative lock-after-idle was accepted")
            if let pinentry = configuration.pinentry {
                require(pinentry.hasPrefix("/"), "a relative pinentry was accepted: \(pinentry.debugDescription)")
            }
        } catch {
            let lines = text.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false).count
            require((0...lines).contains(error.line), "error on line \(error.line) of \(lines): \(error)")
        }
    }
}
