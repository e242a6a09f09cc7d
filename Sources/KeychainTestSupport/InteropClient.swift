public import Foundation

/// Independent client implementations of the Secret Service, each talking D-Bus with a library
/// of its own, for the cross-client tests (`ClientInteropTests`): libsecret (C, GDBus) through
/// `secret-tool`, and the clients in `scripts/interop/` on jeepney (Python), godbus (Go) and
/// Net::DBus over libdbus (Perl). Each stores an item (label, attributes, the secret on
/// standard input) and looks one up by its attributes.
public enum InteropClient: String, CaseIterable, Sendable, CustomStringConvertible {
    /// `secret-tool` (libsecret): an encrypted session, `text/plain`.
    case libsecret
    /// `python-client.py` (secretstorage on jeepney, as Python's keyring): an encrypted session, `text/plain`.
    case python
    /// `go-client` (godbus, as go-keyring): a plain session, `text/plain; charset=utf8`.
    case go
    /// `perl-client.pl` (Net::DBus, libdbus): a plain session, `text/plain`.
    case perl

    public var description: String { rawValue }

    /// `scripts/interop/` of this checkout.
    public static var directory: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("scripts/interop")
    }

    /// Whether a lookup prints the content type it was answered on a second line (all but
    /// `secret-tool`, which prints the secret only, and fails on one that is not text).
    public var printsContentType: Bool { self != .libsecret }

    /// The command that stores `label` with `attributes` (the secret on standard input).
    /// `goClient` is the built Go client (``buildGoClient(into:)``).
    public func storeCommand(label: String, attributes: [(String, String)], goClient: URL) -> [String] {
        let pairs = attributes.flatMap { [$0.0, $0.1] }
        switch self {
        case .libsecret: return ["secret-tool", "store", "--label=\(label)"] + pairs
        case .python: return ["/usr/bin/python3", "-B", script("python-client.py"), "store", label] + pairs
        case .go: return [goClient.path, "store", label] + pairs
        case .perl: return ["/usr/bin/perl", script("perl-client.pl"), "store", label] + pairs
        }
    }

    /// The command that prints the secret of the item with `attributes`.
    public func lookupCommand(attributes: [(String, String)], goClient: URL) -> [String] {
        let pairs = attributes.flatMap { [$0.0, $0.1] }
        switch self {
        case .libsecret: return ["secret-tool", "lookup"] + pairs
        case .python: return ["/usr/bin/python3", "-B", script("python-client.py"), "lookup"] + pairs
        case .go: return [goClient.path, "lookup"] + pairs
        case .perl: return ["/usr/bin/perl", script("perl-client.pl"), "lookup"] + pairs
        }
    }

    /// Builds `go-client.go` into `directory` with Debian's Go and godbus (GOPATH mode, no
    /// network); the build cache is kept in `.build/go-cache` for the next run.
    public static func buildGoClient(into directory: URL) throws -> URL {
        let binary = directory.appendingPathComponent("go-client")
        let cache = Self.directory.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(".build/go-cache")
        let environment = [
            "PATH": "/usr/bin:/bin", "HOME": directory.path, "GO111MODULE": "off", "GOPATH": "/usr/share/gocode",
            "GOCACHE": cache.path, "GOFLAGS": "", "CGO_ENABLED": "0",
        ]
        let built = try CommandResult.run(
            ["/usr/bin/go", "build", "-o", binary.path, script("go-client.go")], input: nil, environment: environment, scratch: directory)
        guard built.status == 0 else {
            throw InteropClientError.goBuildFailed(built.errorOutput)
        }
        return binary
    }

    private static func script(_ name: String) -> String { directory.appendingPathComponent(name).path }
    private func script(_ name: String) -> String { Self.script(name) }
}

/// Why an interop client could not be made.
public enum InteropClientError: Error, CustomStringConvertible {
    /// `go build` of the Go client failed, with what it printed.
    case goBuildFailed(String)

    public var description: String {
        switch self {
        case .goBuildFailed(let output): "go build of scripts/interop/go-client.go failed: \(output)"
        }
    }
}
