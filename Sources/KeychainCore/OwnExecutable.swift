import Glibc

/// This process's own program file, as the kernel names it (`/proc/self/exe`): how secretd
/// starts itself again by its real name, and how secretctl finds the secretd and the files
/// installed beside it.
package enum OwnExecutable {
    /// Its absolute path; nil when the link cannot be read or the file was deleted since.
    package static var path: String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard length > 0 else { return nil }
        let path = String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return path.hasPrefix("/") && !path.hasSuffix(" (deleted)") ? path : nil
    }

    /// The directory it is in (`/usr/bin` for `/usr/bin/secretctl`).
    package static var directory: String? {
        guard let path, let slash = path.lastIndex(of: "/") else { return nil }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// The installation prefix it belongs to: the parent of its `bin` directory (`/usr` for
    /// `/usr/bin/secretctl`); nil when it is not in a directory named `bin` (a build tree).
    package static var prefix: String? {
        guard let directory, directory.hasSuffix("/bin") else { return nil }
        let prefix = String(directory.dropLast(4))
        return prefix.isEmpty ? "/" : prefix
    }
}
