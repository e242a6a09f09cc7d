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

    /// The provider chosen by `KEYCHAIN_TEST_PROVIDER`: `gnome-keyring` (the default) or a
    /// command line such as `.build/debug/secretd --foreground --unlock`.
    public static func fromEnvironment() -> ProviderCommand {
        let value = ProcessInfo.processInfo.environment["KEYCHAIN_TEST_PROVIDER"] ?? "gnome-keyring"
        if value.isEmpty || value == "gnome-keyring" { return .gnomeKeyring() }
        return ProviderCommand(
            arguments: value.split(separator: " ").map(String.init), password: "test-login-password")
    }

    /// The command line.
    public var description: String { arguments.joined(separator: " ") }
}
