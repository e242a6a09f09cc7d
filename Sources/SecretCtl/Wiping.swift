import FoundationEssentials
import Glibc

// Zeroing what held a secret (a password, a PIN, a secret read from standard input) once it is
// no longer needed: explicit_bzero, which the compiler may not leave out.

extension Array where Element == UInt8 {
    /// Overwrites every byte with zero (the count stays).
    mutating func wipe() {
        withUnsafeMutableBytes { if let base = $0.baseAddress { explicit_bzero(base, $0.count) } }
    }
}

extension Data {
    /// Overwrites every byte with zero (the count stays).
    mutating func wipe() {
        withUnsafeMutableBytes { if let base = $0.baseAddress { explicit_bzero(base, $0.count) } }
    }
}
