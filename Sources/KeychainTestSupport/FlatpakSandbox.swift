public import Foundation

/// A command run as flatpak runs an app, for the tests of what sandboxed apps can reach: in a
/// bubblewrap sandbox of its own namespaces, with the host's /usr, the app's `/.flatpak-info`,
/// and the session bus only through xdg-dbus-proxy, started inside the same sandbox (as flatpak
/// does) with the filters flatpak 1.14 gives an app: its own names and the portals, plus the
/// manifest's `--talk-name`s. The proxy's socket is the app's `$XDG_RUNTIME_DIR/bus`. The bus
/// sees the proxy's process, so secretd (and xdg-desktop-portal) name the app from the proxy's
/// `/proc/PID/root/.flatpak-info`. As flatpak does, bubblewrap writes the sandbox's process ids
/// (`--info-fd`) to `$XDG_RUNTIME_DIR/.flatpak/INSTANCE/bwrapinfo.json` of the fixture's
/// environment, where xdg-desktop-portal 1.20 (Debian 13) looks before it serves an app (1.16,
/// Debian 12, does not). (A real flatpak needs a runtime from the network.)
public struct FlatpakSandbox {
    /// The app id.
    public var appID: String
    /// Bus names the app may talk to besides the portals (`--talk-name`).
    public var talkNames: [String] = []
    /// Host directories the app sees at the same path, read-only (its scripts).
    public var readOnly: [URL] = [DBusClients.directory]
    /// Host directories the app may write, at the same path (its `~/.var/app/ID`).
    public var writable: [URL] = []
    /// Variables set inside.
    public var environment: [String: String] = [:]

    /// A sandbox for `appID`.
    public init(appID: String, talkNames: [String] = [], writable: [URL] = [], environment: [String: String] = [:]) {
        self.appID = appID
        self.talkNames = talkNames
        self.writable = writable
        self.environment = environment
    }

    /// Whether bubblewrap and xdg-dbus-proxy are installed (the Makefile's DEB_TEST).
    public static var isAvailable: Bool {
        FileManager.default.isExecutableFile(atPath: "/usr/bin/bwrap")
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/xdg-dbus-proxy")
    }

    /// `command` wrapped to run inside the sandbox on `fixture`'s bus.
    public func wrap(_ command: [String], fixture: SecretdFixture) throws -> [String] {
        // An instance of its own for each command, as each `flatpak run` gets.
        let instance = String(UInt32.random(in: 1...UInt32.max))
        let info = fixture.root.appendingPathComponent("flatpak-info-\(appID)-\(instance)")
        try """
            [Application]
            name=\(appID)
            runtime=runtime/org.freedesktop.Platform/x86_64/23.08

            [Instance]
            instance-id=\(instance)
            session-bus-proxy=true

            """.write(to: info, atomically: true, encoding: .utf8)
        let runtimeDirectory = fixture.environment["XDG_RUNTIME_DIR"] ?? fixture.root.appendingPathComponent("run").path
        let instanceDirectory = URL(fileURLWithPath: runtimeDirectory).appendingPathComponent(".flatpak/\(instance)")
        try FileManager.default.createDirectory(at: instanceDirectory, withIntermediateDirectories: true)
        let bwrapInfo = instanceDirectory.appendingPathComponent("bwrapinfo.json")
        let realBus = String(fixture.bus.address.dropFirst("unix:path=".count))
        let runtime = "/run/user/\(getuid())"
        // bwrap writes its information to descriptor 3, which the shell opens on bwrapinfo.json.
        var arguments = ["/bin/sh", "-c", "exec \"$@\" 3>\"$0\"", bwrapInfo.path,
                         "bwrap", "--info-fd", "3", "--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]
        for top in ["/bin", "/lib", "/lib64", "/sbin"] {
            if let target = try? FileManager.default.destinationOfSymbolicLink(atPath: top) {
                arguments += ["--symlink", target, top]
            } else if FileManager.default.fileExists(atPath: top) {
                arguments += ["--ro-bind", top, top]
            }
        }
        arguments += [
            "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/run", "--dir", runtime,
            "--ro-bind", info.path, "/.flatpak-info",
            // The real bus, for the proxy alone.
            "--ro-bind", realBus, realBus,
        ]
        for directory in readOnly { arguments += ["--ro-bind", directory.path, directory.path] }
        for directory in writable { arguments += ["--bind", directory.path, directory.path] }
        arguments += [
            "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-net", "--unshare-uts",
            "--die-with-parent", "--new-session",
            "--setenv", "XDG_RUNTIME_DIR", runtime, "--setenv", "DBUS_SESSION_BUS_ADDRESS", "unix:path=\(runtime)/bus",
        ]
        for (name, value) in environment.sorted(by: { $0.key < $1.key }) { arguments += ["--setenv", name, value] }
        let filters = [
            "--filter", "--own=\(appID).*", "--own=org.mpris.MediaPlayer2.\(appID).*",
            "--call=org.freedesktop.portal.*=*", "--broadcast=org.freedesktop.portal.*=@/org/freedesktop/portal/*",
        ] + talkNames.map { "--talk=\($0)" }
        // The sandbox's first process starts the proxy (the real bus is $0), waits for its
        // socket, then becomes the app.
        let script = "xdg-dbus-proxy \"$0\" \"$XDG_RUNTIME_DIR/bus\" " + filters.map { "'\($0)'" }.joined(separator: " ")
            + " & i=0; while [ ! -S \"$XDG_RUNTIME_DIR/bus\" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done; exec \"$@\""
        return arguments + ["--", "/bin/sh", "-c", script, fixture.bus.address] + command
    }
}
