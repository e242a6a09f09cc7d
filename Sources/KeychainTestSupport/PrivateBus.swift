public import Foundation

/// A private `dbus-daemon` for one test run: a session-type bus with no service directories,
/// so nothing is ever auto-activated on it (not gnome-keyring, not a prompter).
public final class PrivateBus: @unchecked Sendable {
    /// The address clients connect to (`unix:path=…`).
    public let address: String
    private let daemon: SupervisedProcess

    /// Starts the bus with its socket and config in `directory`, and waits until it accepts
    /// connections. `directory` is removed once the bus ends after the test process exits.
    /// With `otherUsers`, clients of any uid may connect (to test that providers refuse them);
    /// `directory` must then be searchable by them. The bus has the limits of a real session bus
    /// (`/usr/share/dbus-1/session.conf`: 50,000 pending replies per connection, 1 GB queues),
    /// as users' buses and the scripts' do, not dbus-daemon's built-in ones (128 pending replies).
    /// Its soft limit of open files is its hard one, as dbus-daemon 1.15 and later set for a
    /// user's bus: as root it asks for 65,536 instead and, where it may not raise the hard limit
    /// (a container: systemd-nspawn's soft 1024, hard 20,000 here), keeps 1024, then cuts off
    /// clients whose descriptors it cannot take (ClientFaultTests.descriptorFlood on Debian 13).
    /// With `descriptorsPerClient`, the bus stops reading from a client while that many of the
    /// descriptors it sent are still held in the bus, as a real session bus does with its
    /// 250,000,000: where the bus's own limit of open files is far below a user's bus's
    /// (524,288 under systemd), a flood of descriptors would otherwise cut the flooders off.
    public init(directory: URL, otherUsers: Bool = false, descriptorsPerClient: Int? = nil) throws {
        let socket = directory.appendingPathComponent("bus").path
        let config = directory.appendingPathComponent("bus.conf")
        try Self.config(socket: socket, otherUsers: otherUsers, descriptorsPerClient: descriptorsPerClient)
            .write(to: config, atomically: true, encoding: .utf8)
        address = "unix:path=\(socket)"
        daemon = try SupervisedProcess(
            ["/bin/sh", "-c", "ulimit -Sn \"$(ulimit -Hn)\" && exec \"$@\"", "sh",
             "dbus-daemon", "--config-file=\(config.path)", "--nofork", "--nopidfile"],
            environment: ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"],
            logURL: directory.appendingPathComponent("bus.log"), removeWhenOrphaned: directory)
        let deadline = Date().addingTimeInterval(10)
        while true {
            if (try? BusConnection(address: address)) != nil {
                if otherUsers { chmod(socket, 0o777) }
                return
            }
            guard daemon.isRunning, Date() < deadline else {
                throw HarnessError("dbus-daemon did not start: \(daemon.log)")
            }
            usleep(20_000)
        }
    }

    /// Ends the bus daemon.
    public func stop() { daemon.stop() }

    /// The limits of a real session bus, shared with `scripts/private-bus.sh`.
    static let sessionLimitsFile = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("scripts/session-bus-limits.conf").path

    private static func config(socket: String, otherUsers: Bool, descriptorsPerClient: Int?) -> String {
        var limits = "\n  <include>\(sessionLimitsFile)</include>"
        if let descriptorsPerClient {
            limits += "\n  <limit name=\"max_incoming_unix_fds\">\(descriptorsPerClient)</limit>"
        }
        return """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>session</type>
          <listen>unix:path=\(socket)</listen>
          <auth>EXTERNAL</auth>
          <policy context="default">\(otherUsers ? "\n    <allow user=\"*\"/>" : "")
            <allow send_destination="*" eavesdrop="true"/>
            <allow eavesdrop="true"/>
            <allow own="*"/>
          </policy>\(limits)
        </busconfig>
        """
    }
}

/// A failure of the test harness itself (a daemon that would not start, a command that hung).
public struct HarnessError: Error, CustomStringConvertible {
    /// What went wrong.
    public let description: String

    /// Creates an error with a message.
    public init(_ description: String) { self.description = description }
}
