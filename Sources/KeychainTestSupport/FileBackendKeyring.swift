public import Foundation

/// Version 1 keyring files written by the real libsecret: its file backend (the one Flatpak
/// apps use, and the format oo7 keeps), driven through `secret-tool` with the backend's test
/// variables (`SECRET_BACKEND=file`, `SECRET_FILE_TEST_PATH`, `SECRET_FILE_TEST_PASSWORD`) and
/// no session bus, so no Secret Service is involved.
public enum FileBackendKeyring {
    /// One item to store: its label, attributes and text secret.
    public struct Item: Sendable {
        public var label: String
        public var attributes: [(String, String)]
        public var secret: String

        public init(label: String, attributes: [(String, String)], secret: String) {
            self.label = label
            self.attributes = attributes
            self.secret = secret
        }
    }

    /// Stores `items`, in order, into the file at `path` (created when missing) under `password`.
    public static func write(_ items: [Item], to path: URL, password: String, scratch: URL) throws {
        let environment = [
            "PATH": "/usr/bin:/bin", "HOME": scratch.path, "SECRET_BACKEND": "file", "SECRET_FILE_TEST_PATH": path.path,
            "SECRET_FILE_TEST_PASSWORD": password, "DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent", "LANG": "C.UTF-8",
        ]
        for item in items {
            let result = try CommandResult.run(
                ["secret-tool", "store", "--label=\(item.label)"] + item.attributes.flatMap { [$0.0, $0.1] },
                input: Data(item.secret.utf8), environment: environment, scratch: scratch)
            guard result.status == 0 else { throw FileBackendKeyringError.storeFailed(result.errorOutput) }
        }
    }
}

/// Why libsecret's file backend did not write a file.
public enum FileBackendKeyringError: Error, CustomStringConvertible {
    /// `secret-tool store` failed, with what it printed.
    case storeFailed(String)

    public var description: String {
        switch self {
        case .storeFailed(let output): "secret-tool store with libsecret's file backend failed: \(output)"
        }
    }
}
