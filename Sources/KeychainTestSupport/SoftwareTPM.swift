public import Foundation
import Glibc

/// Why a software TPM could not be set up; the test fails with this message.
public struct SoftwareTPMError: Error, CustomStringConvertible {
    /// What went wrong.
    public let description: String

    public init(_ description: String) { self.description = description }
}

/// A software TPM of one test's own: swtpm with its state in a fresh temporary directory,
/// serving TCP on 127.0.0.1 (TPM on ``port``, control channel on port + 1), already started up
/// (`startup-clear`). It runs under SupervisedProcess's watchdog, so it ends with the test
/// process even when a test crashes; ``stop()`` ends it and removes its directory.
public final class SoftwareTPM: @unchecked Sendable {
    /// The directory holding the TPM's state (its seeds) and swtpm's log.
    public let directory: URL
    /// The TPM's TCP port.
    public let port: Int
    private let process: SupervisedProcess

    /// The TCTI configuration libtss2 reaches this TPM with.
    public var tcti: String { "swtpm:host=127.0.0.1,port=\(port)" }

    /// Starts a new TPM (its own seeds, so keys sealed by another one do not load here).
    /// - Throws: When swtpm is not installed (Debian's swtpm, in the Makefile's DEB_TEST) or does
    ///   not start listening within 10 seconds.
    public init() throws {
        guard let swtpm = Self.executable("swtpm") else {
            throw SoftwareTPMError(
                "swtpm is not installed: the TPM sealing tests need Debian's swtpm, swtpm-tools and tpm2-tools (make deps)")
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("swtpm-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        // Another process may take the ports between choosing and binding them; then swtpm exits
        // and the next attempt takes others.
        for _ in 0..<5 {
            let port = try Self.freePortPair()
            let process = try SupervisedProcess(
                [
                    swtpm, "socket", "--tpm2", "--tpmstate", "dir=\(directory.path)",
                    "--server", "type=tcp,port=\(port),bindaddr=127.0.0.1",
                    "--ctrl", "type=tcp,port=\(port + 1),bindaddr=127.0.0.1",
                    "--flags", "not-need-init,startup-clear",
                ],
                environment: Self.environment, logURL: directory.appendingPathComponent("swtpm.log"),
                removeWhenOrphaned: directory)
            if Self.waitUntilListening(port, process) {
                self.port = port
                self.process = process
                return
            }
            process.stop()
        }
        let log = (try? String(contentsOf: directory.appendingPathComponent("swtpm.log"), encoding: .utf8)) ?? ""
        try? FileManager.default.removeItem(at: directory)
        throw SoftwareTPMError("swtpm did not start listening: \(log)")
    }

    deinit { stop() }

    /// Ends swtpm and removes its state. Idempotent.
    public func stop() {
        process.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Runs `body` with a new TPM, stopped afterwards whatever happens.
    public static func with<T>(_ body: (SoftwareTPM) throws -> T) throws -> T {
        let tpm = try SoftwareTPM()
        defer { tpm.stop() }
        return try body(tpm)
    }

    // MARK: - tpm2-tools

    /// Runs one of tpm2-tools against this TPM (`TPM2TOOLS_TCTI`); its standard output.
    @discardableResult
    public func tool(_ arguments: [String]) throws -> String {
        guard let path = Self.executable(arguments[0]) else {
            throw SoftwareTPMError("\(arguments[0]) is not installed: the TPM sealing tests need Debian's tpm2-tools")
        }
        let result = try CommandResult.run(
            [path] + arguments.dropFirst(), environment: Self.environment.merging(["TPM2TOOLS_TCTI": tcti]) { $1 },
            scratch: directory, timeout: 30)
        guard result.status == 0 else {
            throw SoftwareTPMError("\(arguments.joined(separator: " ")) exited \(result.status): \(result.errorOutput)")
        }
        return result.text
    }

    /// Extends SHA-256 PCR `index` with a digest of its own, so it no longer holds its value.
    public func extendPCR(_ index: Int) throws {
        try tool(["tpm2_pcrextend", "\(index):sha256=" + String(repeating: "5a", count: 32)])
    }

    /// The handles of the transient objects and of the sessions loaded in the TPM (empty when
    /// everything has been flushed).
    public func loadedHandles() throws -> [String] {
        (try tool(["tpm2_getcap", "handles-transient"]) + tool(["tpm2_getcap", "handles-loaded-session"]))
            .split(separator: "\n").map { String($0) }.filter { $0.hasPrefix("- ") }
    }

    // MARK: - Processes and ports

    /// The environment swtpm and tpm2-tools run in.
    private static let environment = ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"]

    /// The full path of `name` in `PATH`, or nil when it is not installed.
    static func executable(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/\(name)" }.first { access($0, X_OK) == 0 }
    }

    /// A TCP port on 127.0.0.1 that is free, and whose successor is free too.
    public static func freePortPair() throws -> Int {
        for _ in 0..<20 {
            let first = try bind(port: 0)
            defer { close(first.socket) }
            guard first.port < 65535, let second = try? bind(port: first.port + 1) else { continue }
            close(second.socket)
            return first.port
        }
        throw SoftwareTPMError("no two consecutive free TCP ports")
    }

    /// Two consecutive TCP ports on 127.0.0.1 (a TPM's and its control channel's: the swtpm
    /// TCTI connects to both) that take connections, which the kernel completes, and never
    /// answer: a TPM that hangs. Closing the sockets ends it.
    public static func unansweredPortPair() throws -> (sockets: [Int32], port: Int) {
        for _ in 0..<20 {
            let first = try bind(port: 0)
            guard first.port < 65535, let second = try? bind(port: first.port + 1),
                listen(first.socket, 16) == 0, listen(second.socket, 16) == 0
            else {
                close(first.socket)
                continue
            }
            return ([first.socket, second.socket], first.port)
        }
        throw SoftwareTPMError("no two consecutive free TCP ports")
    }

    /// A TCP socket bound to `port` on 127.0.0.1 (0: any free one), and the port it got.
    private static func bind(port: Int) throws -> (socket: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SoftwareTPMError("socket failed") }
        var address = loopback(port)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard bound == 0, named == 0 else {
            close(fd)
            throw SoftwareTPMError("port \(port) is taken")
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// 127.0.0.1:`port`.
    private static func loopback(_ port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        return address
    }

    /// Whether something accepts TCP connections on 127.0.0.1:`port`.
    static func isListening(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = loopback(port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// Waits up to 10 seconds for swtpm to listen on `port`; false when it exits first
    /// (the port was taken) or never does.
    private static func waitUntilListening(_ port: Int, _ process: SupervisedProcess) -> Bool {
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline && process.isRunning {
            if isListening(port) && isListening(port + 1) { return true }
            usleep(20_000)
        }
        return false
    }
}
