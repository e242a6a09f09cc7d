import FoundationEssentials
import Glibc
import KeychainCore
import SecretCrypto

/// Everything `secretctl` does with its standard streams and the terminal.
enum Terminal {
    /// Whether `descriptor` is a terminal.
    static func isTerminal(_ descriptor: Int32) -> Bool { isatty(descriptor) != 0 }

    /// The secret for a write: typed without echo on a terminal (one line), otherwise all of
    /// standard input, byte for byte. The library refuses values over its limit.
    static func readSecret(limit: Int, prompt: String = "Secret: ") throws(CommandLineError) -> Data {
        if isTerminal(STDIN_FILENO) { return try readHidden(prompt: prompt, limit: min(limit, KeychainLimits.textSize)) }
        return try readStandardInput(limit: limit, what: "the secret")
    }

    /// A password or PIN: typed without echo on a terminal, otherwise standard input without
    /// its one trailing newline (`printf '%s\n' "$PW" | …`). The caller wipes what it gets.
    static func readSecretLine(limit: Int, prompt: String) throws(CommandLineError) -> [UInt8] {
        var data = try readSecret(limit: limit, prompt: prompt)
        defer { data.wipe() }
        var bytes = [UInt8](data)
        if bytes.last == UInt8(ascii: "\n") { bytes.removeLast() }
        return bytes
    }

    /// All of standard input; `what` names it in the error when it is over `limit` bytes. The
    /// read buffer is wiped; the caller wipes what it gets.
    static func readStandardInput(limit: Int, what: String) throws(CommandLineError) -> Data {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        defer { buffer.wipe() }
        while true {
            let count = buffer.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            data.append(contentsOf: buffer[0..<count])
            if data.count > limit { throw .failure("\(what) on standard input is larger than \(limit) bytes", status: .usage) }
        }
        return data
    }

    /// One line typed on the terminal without echo, after `prompt` on standard error; at most
    /// `limit` bytes (a terminal's line is far shorter). The caller wipes what it gets.
    static func readHidden(prompt: String, limit: Int = KeychainLimits.passwordSize) throws(CommandLineError) -> Data {
        guard isTerminal(STDIN_FILENO) else { throw .failure("cannot read the terminal", status: .usage) }
        let line = HiddenLine(from: STDIN_FILENO, limit: limit, prompt: { writeError(prompt) }, newline: { writeError("\n") })
        if line.isTruncated { throw .failure("the line typed is longer than \(limit) bytes", status: .usage) }
        return line.withBytes { Data($0) }
    }

    /// A password typed without echo after `prompt`, in secure memory.
    static func readPassword(prompt: String) throws(CommandLineError) -> SecureBytes {
        var data = try readHidden(prompt: prompt)
        defer { data.wipe() }
        return data.withUnsafeBytes { SecureBytes(copying: $0) }
    }

    /// The passwords on standard input, one per line, for importers that try each on each
    /// keyring; when standard input is a terminal, one typed without echo after `prompt`.
    static func readPasswordLines(promptOnTerminal prompt: String) throws(CommandLineError) -> [SecureBytes] {
        guard !isTerminal(STDIN_FILENO) else { return [try readPassword(prompt: prompt)] }
        var data = try readStandardInput(limit: 64 * KeychainLimits.passwordSize, what: "the passwords")
        defer { data.wipe() }
        return data.withUnsafeBytes { bytes in
            bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true).map { SecureBytes(copying: UnsafeRawBufferPointer(rebasing: $0)) }
        }
    }

    /// Writes bytes to standard output.
    static func writeOutput(_ data: Data) {
        data.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(STDOUT_FILENO, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 { if errno == EINTR { continue } else { return } }
                offset += written
            }
        }
    }

    /// Writes text to standard output.
    static func writeOutput(_ text: String) { writeOutput(Data(text.utf8)) }

    /// Writes text to standard error.
    static func writeError(_ text: String) {
        var bytes = Array(text.utf8)
        _ = bytes.withUnsafeMutableBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
    }
}
