public import Foundation

/// The Python D-Bus clients the tests and `make bench` share: one file each in
/// `scripts/dbus-clients/`, all importing its `prelude.py`. Found from this file's place in the
/// checkout, since the test bundle runs from `.build`.
public enum DBusClients {
    /// `scripts/dbus-clients/` of this checkout.
    public static var directory: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("scripts/dbus-clients")
    }

    /// The command that runs client `name` (`flooder.py`) with `arguments`: Debian's Python,
    /// which has jeepney and secretstorage. `-B`: importing the prelude leaves no
    /// `__pycache__` in the source tree.
    public static func command(_ name: String, _ arguments: [String] = []) -> [String] {
        ["/usr/bin/python3", "-B", directory.appendingPathComponent(name).path] + arguments
    }
}
