internal import CProcess
import Glibc
import KeychainCore

/// A Unix socket secretd binds itself under `$XDG_RUNTIME_DIR` when systemd did not pass it
/// one (the login socket, the SSH agent's): in a directory of this user's only (0700, not a
/// link), never over a socket another process still answers on, and replacing one a secretd
/// that did not stop cleanly left behind.
enum PrivateSocket {
    /// Listens at `path` in `directory` (made if missing); nil, after logging why, when it
    /// cannot, or when another process answers there already. `consequence` says in the log
    /// what is then lost ("no SSH agent"); `otherListener` what the process already there
    /// means ("it receives the login password, not this secretd").
    static func listen(at path: String, in directory: String, consequence: String, otherListener: String) -> Int32? {
        guard makePrivateDirectory(directory, consequence: consequence) else { return nil }
        var status = stat()
        if lstat(path, &status) == 0 {
            guard (status.st_mode & S_IFMT) == S_IFSOCK, status.st_uid == getuid() else {
                Log.warning("\(path) is not a socket of this user; \(consequence)")
                return nil
            }
            if keychain_unix_socket_answers(path) != 0 {
                Log.info("another process listens on \(path); \(otherListener)")
                return nil
            }
            unlink(path)  // left behind by a secretd that did not stop cleanly
        }
        let fd = keychain_listen_unix(path)
        guard fd >= 0 else {
            Log.warning("cannot listen on \(path): \(String(cString: strerror(errno))); \(consequence)")
            return nil
        }
        return fd
    }

    /// Creates `path` as a 0700 directory of this user, or checks that it is one (not a link)
    /// and takes away any access of others.
    private static func makePrivateDirectory(_ path: String, consequence: String) -> Bool {
        if mkdir(path, 0o700) == 0 { return true }
        var status = stat()
        guard errno == EEXIST, lstat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFDIR, status.st_uid == getuid() else {
            Log.warning("\(path) is not a directory of this user; \(consequence)")
            return false
        }
        if status.st_mode & 0o077 != 0 { chmod(path, 0o700) }
        return true
    }
}
