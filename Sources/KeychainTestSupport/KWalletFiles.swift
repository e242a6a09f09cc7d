public import Foundation

/// Wallet files that the real kwalletd5 wrote (scripts/make-kwallets.py), made once per test
/// process, with the manifest of what a fresh kwalletd showed for them over D-Bus after loading
/// them again.
public enum KWalletFiles {
    /// The files and their manifest.
    public struct Made: @unchecked Sendable {
        /// The directory of `NAME.kwl`, `NAME.salt` and `NAME_attributes.json` files; copy it
        /// before changing anything.
        public let directory: URL
        /// The manifest (`wallets`: name, file, password, header, folders, secret_service).
        public let manifest: [String: Any]
        /// The manifest's wallets.
        public var wallets: [[String: Any]] { manifest["wallets"] as? [[String: Any]] ?? [] }
    }

    /// Why the script failed.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    private static let once: Result<Made, any Error> = Result {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("kwallets-\(UUID().uuidString.prefix(8))")
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/make-kwallets.py")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let manifestURL = root.appendingPathComponent("manifest.json")
        let result = try CommandResult.run(
            ["/usr/bin/python3", script.path, root.appendingPathComponent("out").path, manifestURL.path],
            environment: ["PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"], scratch: root)
        guard result.status == 0 else { throw Failure(description: "make-kwallets.py: \(result.errorOutput)") }
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
