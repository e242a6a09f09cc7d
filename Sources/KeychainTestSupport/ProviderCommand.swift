import Foundation

/// How to start a Secret Service provider for tests: a command line whose standard input
/// receives the login password (the `--unlock` contract of `gnome-keyring-daemon` and `secretd`).
public struct ProviderCommand: Sendable, CustomStringConvertible {
    /// The command; `arguments[0]` is the executable, looked up in `PATH`.
    public var arguments: [String]
    /// The login password, written to the provider's standard input at start.
    public var password: String

    /// Creates a provider command.
    public init(arguments: [String], password: String) {
        self.arguments = arguments
        self.password = password
    }

    /// gnome-keyring's secrets component, in the foreground, unlocked with `password`.
    public static func gnomeKeyring(password: String = "test-login-password") -> ProviderCommand {
        ProviderCommand(
            arguments: ["gnome-keyring-daemon", "--foreground", "--components=secrets", "--unlock"],
            password: password)
    }

    /// This package's `secretd`, built next to the test bundle, unlocked with `password`.
    public static func secretd(password: String = "test-login-password") -> ProviderCommand {
        let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        return ProviderCommand(
            arguments: [directory.appendingPathComponent("secretd").path, "--foreground", "--unlock"], password: password)
    }

    /// The provider chosen by `KEYCHAIN_TEST_PROVIDER`: `gnome-keyring` (the default),
    /// `secretd` (this package's build), or a command line that takes the password on stdin.
    public static func fromEnvironment() -> ProviderCommand {
        let value = ProcessInfo.processInfo.environment["KEYCHAIN_TEST_PROVIDER"] ?? "gnome-keyring"
        if value.isEmpty || value == "gnome-keyring" { return .gnomeKeyring() }
        if value == "secretd" { return .secretd() }
        return ProviderCommand(
            arguments: value.split(separator: " ").map(String.init), password: "test-login-password")
    }

    /// Whether the provider is this package's `secretd` (which, unlike gnome-keyring, makes the
    /// next password attempt on a keyring wait after a wrong one, whatever the route).
    public var isSecretd: Bool { arguments.first.map { URL(fileURLWithPath: $0).lastPathComponent == "secretd" } ?? false }

    /// The command line.
    public var description: String { arguments.joined(separator: " ") }
}
