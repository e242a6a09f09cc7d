public import Foundation

/// Files that a script of `scripts/` makes with a real daemon (gnome-keyring-daemon's keyrings,
/// kwalletd's wallets), with the manifest of what that daemon showed for them over D-Bus: made
/// once per test process by ``GnomeKeyringFiles`` and ``KWalletFiles``, each of which keeps its
/// own ``make(script:directoryPrefix:)`` result.
public enum ScriptMadeFiles {
    /// The files and their manifest.
    public struct Made: @unchecked Sendable {
        /// The directory of the files; copy it before changing anything (``copy(_:to:)``).
        public let directory: URL
        /// The manifest the script wrote.
        public let manifest: [String: Any]
    }

    /// Why the script failed.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Runs `scripts/SCRIPT OUT MANIFEST` in a new temporary directory named after
    /// `directoryPrefix`; the files it made, or why it failed.
    static func make(script name: String, directoryPrefix: String) -> Result<Made, any Error> {
        Result {
            let root = FileManager.default.temporaryDirectory.appendingPathComponent("\(directoryPrefix)-\(UUID().uuidString.prefix(8))")
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("scripts/\(name)")
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
            let manifestURL = root.appendingPathComponent("manifest.json")
            let result = try CommandResult.run(
                ["/usr/bin/python3", script.path, root.appendingPathComponent("out").path, manifestURL.path],
                environment: ["PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"], scratch: root)
            guard result.status == 0 else { throw Failure(description: "\(name): \(result.errorOutput)") }
            let manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: manifestURL)) as? [String: Any] ?? [:]
            return Made(directory: root.appendingPathComponent("out"), manifest: manifest)
        }
    }

    /// A copy of `made`'s files in `destination` (created), for a test that changes them.
    static func copy(_ made: Made, to destination: URL) throws -> Made {
        try FileManager.default.copyItem(at: made.directory, to: destination)
        return Made(directory: destination, manifest: made.manifest)
    }
}
