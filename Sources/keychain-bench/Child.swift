import Foundation
import ProcessSpawning

/// A child process of the bench, started with posix_spawn and waited for with waitpid, so
/// that its time is its own (Foundation's `Process` notices an exit only on its run loop's
/// next turn, which added about 40 ms to every whole-process lookup).
final class Child {
    private let pid: Int32
    private let output: Int32
    private let input: Int32?

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
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while read(output, &byte, 1) == 1, byte != UInt8(ascii: "\n") { line.append(byte) }
        return String(decoding: line, as: UTF8.self)
    }

    /// Writes one byte to its standard input.
    func go() {
        guard let input else { return }
        var byte = UInt8(ascii: "g")
        _ = write(input, &byte, 1)
    }

    /// Waits for it to exit; its exit status.
    func waitForExit() -> Int32 { ProcessSpawning.waitForExit(pid) }
}
