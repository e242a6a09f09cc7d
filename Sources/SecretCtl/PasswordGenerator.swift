import Glibc
import KeychainCore

/// Random passwords from the kernel's generator (`/dev/urandom`), without modulo bias.
enum PasswordGenerator {
    /// The character sets `--charset` names.
    static func alphabet(named name: String) -> [Character]? {
        let lower = Array("abcdefghijklmnopqrstuvwxyz")
        let upper = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
        let digits = Array("0123456789")
        switch name {
        case "alnum": return lower + upper + digits
        case "alpha": return lower + upper
        case "digits": return digits
        case "printable": return lower + upper + digits + Array("!#$%&()*+,-./:;<=>?@[]^_{|}~")
        default: return nil
        }
    }

    /// `length` characters drawn uniformly from `alphabet`.
    static func generate(length: Int, alphabet: [Character]) throws(CommandLineError) -> String {
        // Accept only bytes below the largest multiple of the alphabet size: no modulo bias.
        let limit = 256 - 256 % alphabet.count
        var result = ""
        var pool = [UInt8](repeating: 0, count: 256)
        defer { pool.wipe() }
        let source = open("/dev/urandom", O_RDONLY | O_CLOEXEC)
        guard source >= 0 else { throw .failure("cannot open /dev/urandom", status: .failed) }
        defer { close(source) }
        while result.count < length {
            let got = pool.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
            guard got > 0 else { throw .failure("the kernel's random generator failed", status: .failed) }
            for byte in pool[0..<got] where Int(byte) < limit && result.count < length {
                result.append(alphabet[Int(byte) % alphabet.count])
            }
        }
        return result
    }
}
