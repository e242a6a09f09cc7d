public import Foundation

/// Keyring files that the real gnome-keyring-daemon wrote (scripts/make-gnome-keyrings.py),
/// made once per test process, with the manifest of what that daemon showed for them over D-Bus
/// after loading them again.
public enum GnomeKeyringFiles {
    /// The files and their manifest.
    public struct Made: @unchecked Sendable {
        /// The directory of `*.keyring` files and `default`; copy it before changing anything.
        public let directory: URL
        /// The manifest (`keyrings`: file, name, password, format, header, items).
        public let manifest: [String: Any]
        /// The manifest's keyrings.
        public var keyrings: [[String: Any]] { manifest["keyrings"] as? [[String: Any]] ?? [] }
    }

    /// Why the script failed.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    private static let once: Result<Made, any Error> = Result {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("gnome-keyrings-\(UUID().uuidString.prefix(8))")
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/make-gnome-keyrings.py")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let manifestURL = root.appendingPathComponent("manifest.json")
        let result = try CommandResult.run(
            ["/usr/bin/python3", script.path, root.appendingPathComponent("out").path, manifestURL.path],
            environment: ["PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"], scratch: root)
        guard result.status == 0 else { throw Failure(description: "make-gnome-keyrings.py: \(result.errorOutput)") }
        let manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: manifestURL)) as? [String: Any] ?? [:]
        return Made(directory: root.appendingPathComponent("out"), manifest: manifest)
    }

    /// The files, made on the first call.
    public static func made() throws -> Made { try once.get() }

    /// A copy of the files in `destination` (created), for a test that changes them.
    public static func copy(to destination: URL) throws -> Made {
        let made = try made()
        try FileManager.default.copyItem(at: made.directory, to: destination)
        return Made(directory: destination, manifest: made.manifest)
    }
}
