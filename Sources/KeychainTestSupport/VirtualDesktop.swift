public import Foundation

/// What a desktop session gives GUI programs under test: an X display of its own (Xvfb) and
/// the accessibility bus (AT-SPI) on the fixture's session bus, through which the tests find and
/// read widgets as a screen reader would. GSettings keep to memory.
public final class VirtualDesktop: @unchecked Sendable {
    /// The display's name (`:N`).
    public let display: String
    /// The accessibility bus's address, named to every program of this desktop so that none
    /// looks for it on the display (another test's desktop may share no display, but the root
    /// window's `AT_SPI_BUS` property would be the first place they look).
    public let accessibilityBusAddress: String
    /// The variables a program on this desktop needs, on top of the fixture's environment.
    public var environment: [String: String] {
        ["DISPLAY": display, "GSETTINGS_BACKEND": "memory", "AT_SPI_BUS_ADDRESS": accessibilityBusAddress]
    }

    /// Held while a display is chosen, so that two desktops of one test run never pick the same.
    private static let choosing = NSLock()

    private let server: SupervisedProcess
    private let accessibility: SupervisedProcess

    /// Starts Xvfb on a free display, then the accessibility bus on `fixture`'s bus (which
    /// activates nothing, so it is started here as a session would).
    public init(on fixture: SecretdFixture) throws {
        Self.choosing.lock()
        defer { Self.choosing.unlock() }
        var started: (SupervisedProcess, String)?
        for number in (100 + Int(getpid() % 300))..<(400 + Int(getpid() % 300)) {
            let socket = "/tmp/.X11-unix/X\(number)"
            if FileManager.default.fileExists(atPath: socket) || FileManager.default.fileExists(atPath: "/tmp/.X\(number)-lock") {
                continue
            }
            let process = try SupervisedProcess(
                ["Xvfb", ":\(number)", "-screen", "0", "1280x800x24", "-nolisten", "tcp"], environment: fixture.environment,
                logURL: fixture.root.appendingPathComponent("xvfb.log"))
            let deadline = Date().addingTimeInterval(10)
            while !FileManager.default.fileExists(atPath: socket), process.isRunning, Date() < deadline { usleep(50_000) }
            // The socket may be another server's that won the display first: ours holds its lock.
            let owner = (try? String(contentsOfFile: "/tmp/.X\(number)-lock", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines)
            if FileManager.default.fileExists(atPath: socket), process.isRunning, let pid = process.helperPID, owner == String(pid) {
                started = (process, ":\(number)")
                break
            }
            process.stop()
        }
        guard let (server, display) = started else {
            throw CocoaError(.fileNoSuchFile, userInfo: [NSLocalizedDescriptionKey: "no free X display for Xvfb"])
        }
        self.server = server
        self.display = display
        do {
            accessibility = try SupervisedProcess(
                ["/usr/libexec/at-spi-bus-launcher", "--launch-immediately"],
                environment: fixture.environment.merging(["DISPLAY": display]) { $1 },
                logURL: fixture.root.appendingPathComponent("at-spi.log"))
            try fixture.control.waitForOwner(of: "org.a11y.Bus", startedBy: accessibility)
            let reply = try fixture.control.call("/org/a11y/bus", "org.a11y.Bus", "GetAddress", destination: "org.a11y.Bus")
            // ('unix:path=...',)
            accessibilityBusAddress = String(reply.dropFirst(2).dropLast(3))
        } catch {
            server.stop()
            throw error
        }
    }

    /// Stops the accessibility bus and the display.
    public func stop() {
        accessibility.stop()
        server.stop()
    }
}
