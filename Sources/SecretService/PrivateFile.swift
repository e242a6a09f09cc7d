public import FoundationEssentials
import Glibc

/// How secretd replaces one of its own files whole (`access-groups.conf`, the TPM slot): the
/// new bytes go to a temporary file beside it (0600, never through a link), are flushed to
/// disk, and the file is renamed over the old one, then the directory is flushed; a crash
/// leaves the old file or the new one, never a mix.
enum PrivateFile {
    /// Writes `bytes` as the file at `url`; nil when done, else why not (`strerror`'s words).
    static func replace(_ url: URL, with bytes: [UInt8]) -> String? {
        let temporary = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).\(getpid()).tmp").path
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else { return String(cString: strerror(errno)) }
        fchmod(descriptor, 0o600)
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        let flushed = fsync(descriptor) == 0
        close(descriptor)
        guard written == bytes.count, flushed, rename(temporary, url.path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            return reason
        }
        syncDirectory(of: url)
        return nil
    }

    /// Flushes the directory holding `url`, so that a rename or unlink there is on disk.
    static func syncDirectory(of url: URL) {
        let descriptor = open(url.deletingLastPathComponent().path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        fsync(descriptor)
        close(descriptor)
    }
}
