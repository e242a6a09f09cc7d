import Foundation
import Glibc
import ProcessSpawning

/// A child process of the bench, started with posix_spawn and waited for with waitpid, so
/// that its time is its own (Foundation's `Process` notices an exit only on its run loop's
/// next turn, which added about 40 ms to every whole-process lookup).
final class Child {
    /// Its process id.
    let pid: Int32
    private let output: Int32
    private let input: Int32?
    /// Output read but not yet returned as a line.
    private var pending: [UInt8] = []
    private var outputEnded = false
    /// Its exit status, once waited for.
    private var status: Int32?

    /// Starts `command` with the bench's environment; its standard output comes to
    /// ``readLine()``, and with `input`, its standard input from ``go()``.
    init(_ command: [String], input: Bool = false) throws {
        var outputPipe: [Int32] = [0, 0]
        var inputPipe: [Int32] = [0, 0]
        guard pipe(&outputPipe) == 0, !input || pipe(&inputPipe) == 0 else {
            throw BenchError("no pipe: \(String(cString: strerror(errno)))")
        }
        // Not inherited by later children (posix_spawn's dup2 clears the flag on 0 and 1).
        for descriptor in outputPipe + (input ? inputPipe : []) { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        var descriptors = [(child: Int32(1), parent: outputPipe[1])]
        if input { descriptors.append((child: 0, parent: inputPipe[0])) }
        let started = ProcessSpawning.spawn(command, environment: ProcessInfo.processInfo.environment, descriptors: descriptors)
        close(outputPipe[1])
        if input { close(inputPipe[0]) }
        switch started {
        case .success(let pid): self.pid = pid
        case .failure(let error): throw BenchError("cannot start \(command[0]): \(error)")
        }
        output = outputPipe[0]
        self.input = input ? inputPipe[1] : nil
    }

    deinit {
        close(output)
        if let input { close(input) }
    }

    /// The next line of its output, without the newline; at the end of the output, what is left.
    func readLine() -> String {
        if let line = readLine(timeout: nil) { return line }
        defer { pending = [] }
        return String(decoding: pending, as: UTF8.self)
    }

    /// The next line of its output, without the newline, if one comes within `timeout`
    /// seconds (nil: wait as long as it takes); nil when none came or the output ended first.
    func readLine(timeout: Double?) -> String? {
        let deadline = timeout.map { DispatchTime.now().uptimeNanoseconds + UInt64($0 * 1e9) }
        while true {
            if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                defer { pending.removeSubrange(...newline) }
                return String(decoding: pending[..<newline], as: UTF8.self)
            }
            guard !outputEnded else { return nil }
            var wait: Int32 = -1
            if let deadline {
                let now = DispatchTime.now().uptimeNanoseconds
                guard now < deadline else { return nil }
                wait = Int32(min((deadline - now) / 1_000_000 + 1, UInt64(Int32.max)))
            }
            var ready = pollfd(fd: output, events: Int16(POLLIN), revents: 0)
            let polled = poll(&ready, 1, wait)
            if polled < 0 && errno == EINTR { continue }
            guard polled > 0 else { return nil }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = read(output, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { outputEnded = true } else { pending += chunk[..<count] }
        }
    }

    /// Writes one byte to its standard input.
    func go() {
        guard let input else { return }
        var byte = UInt8(ascii: "g")
        _ = write(input, &byte, 1)
    }

    /// Waits for it to exit; its exit status.
    func waitForExit() -> Int32 {
        if let status { return status }
        let exited = ProcessSpawning.waitForExit(pid)
        status = exited
        return exited
    }

    /// Its exit status if it has exited, without waiting.
    func exitStatus() -> Int32? {
        if let status { return status }
        var raw: Int32 = 0
        guard waitpid(pid, &raw, WNOHANG) == pid else { return nil }
        status = ProcessSpawning.exitStatus(raw)
        return status
    }

    /// Sends it `signal` (SIGKILL, as a crash) unless it has been waited for.
    func kill(_ signal: Int32 = SIGKILL) {
        if status == nil { _ = Glibc.kill(pid, signal) }
    }
}
