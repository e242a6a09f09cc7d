import FoundationEssentials
import Glibc
import Keychain
import KeychainCore

// How `secretctl setup` keeps gnome-keyring from providing the Secret Service where it is
// installed, and how `--undo` gives it back. gnome-keyring 42 (Debian 12) claims
// org.freedesktop.secrets in four ways, each of which `setup` turns off:
//   - its user units: gnome-keyring-daemon.socket, enabled for every user, starts
//     gnome-keyring-daemon.service (the Secret Service included) when pam_gnome_keyring
//     connects at a desktop login; the service is also wanted by graphical sessions;
//   - its D-Bus activation files: org.freedesktop.secrets, org.gnome.keyring and
//     org.freedesktop.impl.portal.Secret all start its Secret Service;
//   - its XDG autostart entry gnome-keyring-secrets.desktop, which GNOME, Unity and MATE
//     sessions run.
// Once started, gnome-keyring asks for the name without DO_NOT_QUEUE: behind secretd it waits in
// line and takes the name the moment secretd restarts. So nothing of it may start, and a
// gnome-keyring that already provides the Secret Service is stopped. Its SSH agent and PKCS#11
// parts (their own autostart entries) are left alone: they do not claim the name.

extension SetupCommand {
    /// gnome-keyring's user units that start its Secret Service.
    static let gnomeKeyringUnits = ["gnome-keyring-daemon.socket", "gnome-keyring-daemon.service"]
    /// Where Debian installs user units.
    static var packagedUnitDirectory: String { systemRoot + "/usr/lib/systemd/user" }
    /// gnome-keyring's D-Bus activation files, each replaced by secretd's file of the same
    /// name: secretd's own for org.freedesktop.secrets, one that fails at once for the others.
    static let gnomeKeyringActivationFiles = [
        "org.freedesktop.secrets.service", "org.gnome.keyring.service", "org.freedesktop.impl.portal.Secret.service",
    ]
    /// Where Debian packages put session-bus activation files.
    static var packagedActivationDirectory: String { systemRoot + "/usr/share/dbus-1/services" }
    /// gnome-keyring's autostart entry for its Secret Service.
    static var gnomeKeyringAutostartEntry: String { systemRoot + "/etc/xdg/autostart/gnome-keyring-secrets.desktop" }
    /// What dpkg-divert renames gnome-keyring's activation file to: no `.service` at the end,
    /// so the bus no longer reads it.
    static let divertedSuffix = ".gnome-keyring"
    /// The comment `setup --system` writes above the line it adds to gnome-keyring's autostart
    /// entry; `--undo` removes the two lines.
    static let autostartMarker = "# Added by secretctl setup --system (secretd provides the Secret Service); secretctl setup --system --undo removes it"
    /// The line it adds.
    static let autostartHidden = "Hidden=true"

    /// The files `make install` puts in PREFIX/share/secretd for setup to link in place of
    /// gnome-keyring's, relative to that directory.
    enum Replacement {
        static func activationFile(_ name: String) -> String { "dbus-1/services/" + name }
        static let autostartEntry = "autostart/gnome-keyring-secrets.desktop"
    }

    // MARK: - One user

    /// Turns gnome-keyring's Secret Service off for the user running setup, and stops the one
    /// running now; says what it did.
    static func switchOffGnomeKeyringForMe() throws(CommandLineError) {
        try maskUnits(
            gnomeKeyringUnits, record: maskRecord, subject: "gnome-keyring", arguments: ["--user", "mask", "--now"],
            in: userUnitDirectory, for: "you", detail: " (they start its Secret Service at login)")
        var links = gnomeKeyringActivationFiles.filter { isGnomeKeyrings(packagedActivationDirectory + "/" + $0) }
            .map { (userDataDirectory + "/dbus-1/services/" + $0, Replacement.activationFile($0)) }
        if FileManager.default.fileExists(atPath: gnomeKeyringAutostartEntry) {
            links.append((userConfigDirectory + "/autostart/gnome-keyring-secrets.desktop", Replacement.autostartEntry))
        }
        if !links.isEmpty {
            let share = try replacementDirectory()
            for (path, replacement) in links { try link(path, to: share + "/" + replacement) }
            // The bus reads activation files when they change, but not in a directory that did
            // not exist when it started.
            do {
                try KeychainProvider.reloadBusConfiguration()
            } catch {
                Terminal.writeError("secretctl: the session bus did not reload its activation files (\(error)); they count from your next login\n")
            }
        }
        try stopRunningGnomeKeyring()
    }

    /// Gives gnome-keyring back to the user running setup --undo; says what it did.
    static func giveBackGnomeKeyringToMe() throws(CommandLineError) {
        var removed = false
        for name in gnomeKeyringActivationFiles {
            removed = removeLink(userDataDirectory + "/dbus-1/services/" + name, to: Replacement.activationFile(name)) || removed
        }
        removed = removeLink(userConfigDirectory + "/autostart/gnome-keyring-secrets.desktop", to: Replacement.autostartEntry) || removed
        if removed { try? KeychainProvider.reloadBusConfiguration() }
        let unmasked = try !unmaskUnits(
            gnomeKeyringUnits, record: maskRecord, subject: "gnome-keyring", arguments: ["--user", "unmask"], in: userUnitDirectory
        ).isEmpty
        if removed || unmasked {
            Terminal.writeOutput(
                "gnome-keyring: its units, D-Bus activation and autostart are back for you: it provides the Secret Service "
                    + "again, from the next client call (locked) and unlocked at your next login\n")
        }
    }

    // MARK: - Every user

    /// Turns gnome-keyring's Secret Service off for every user, from their next login; says
    /// what it did.
    static func switchOffGnomeKeyringForEveryone() throws(CommandLineError) {
        try maskUnits(
            gnomeKeyringUnits, record: maskRecord, subject: "gnome-keyring", arguments: ["--global", "mask"],
            in: globalUnitDirectory, for: "every user", detail: " (/etc/systemd/user)")
        let files = gnomeKeyringActivationFiles.filter { isGnomeKeyrings(packagedActivationDirectory + "/" + $0) }
        if !files.isEmpty {
            let share = try replacementDirectory()
            for name in files {
                let path = packagedActivationDirectory + "/" + name
                try runTool(["dpkg-divert", "--quiet", "--local", "--rename", "--divert", path + divertedSuffix, "--add", path])
                try link(path, to: share + "/" + Replacement.activationFile(name))
            }
            Terminal.writeOutput(
                "gnome-keyring: its D-Bus activation files moved aside (dpkg-divert, \(divertedSuffix)): org.freedesktop.secrets "
                    + "starts secretd (which is also the desktop portal's Secret backend), org.gnome.keyring and "
                    + "org.freedesktop.impl.portal.Secret start nothing\n")
        }
        if let text = try? String(contentsOfFile: gnomeKeyringAutostartEntry, encoding: .utf8) {
            if text.split(separator: "\n").contains(Substring(autostartMarker)) {
                Terminal.writeOutput("gnome-keyring: its autostart entry was already hidden\n")
            } else {
                try rewrite(gnomeKeyringAutostartEntry, text + (text.hasSuffix("\n") ? "" : "\n") + autostartMarker + "\n" + autostartHidden + "\n")
                Terminal.writeOutput("gnome-keyring: hid its autostart entry (\(gnomeKeyringAutostartEntry): \(autostartHidden))\n")
            }
        }
    }

    /// Gives gnome-keyring back to every user; says what it did.
    static func giveBackGnomeKeyringToEveryone() throws(CommandLineError) {
        var changed = false
        for name in gnomeKeyringActivationFiles {
            let path = packagedActivationDirectory + "/" + name
            if removeLink(path, to: Replacement.activationFile(name)) { changed = true }
            if FileManager.default.fileExists(atPath: path + divertedSuffix) {
                try runTool(["dpkg-divert", "--quiet", "--local", "--rename", "--remove", path])
                changed = true
            }
        }
        if let text = try? String(contentsOfFile: gnomeKeyringAutostartEntry, encoding: .utf8) {
            var lines = text.components(separatedBy: "\n")
            if let marker = lines.firstIndex(of: autostartMarker) {
                let end = marker + 1 < lines.count && lines[marker + 1] == autostartHidden ? marker + 2 : marker + 1
                lines.removeSubrange(marker..<end)
                try rewrite(gnomeKeyringAutostartEntry, lines.joined(separator: "\n"))
                changed = true
            }
        }
        if try !unmaskUnits(
            gnomeKeyringUnits, record: maskRecord, subject: "gnome-keyring", arguments: ["--global", "unmask"], in: globalUnitDirectory
        ).isEmpty {
            changed = true
        }
        if changed {
            Terminal.writeOutput(
                "gnome-keyring: its units, D-Bus activation files and autostart entry are as its package installed them: "
                    + "it provides the Secret Service again from each user's next login\n")
        }
    }

    // MARK: - Activation where no package provides the Secret Service's

    /// Where no package's activation file names org.freedesktop.secrets (gnome-keyring is not
    /// installed), links secretd's in its place, for every user, so that the first client call
    /// starts secretd; says so. No package of secretd's ships the file there: it is
    /// gnome-keyring's path, and two packages cannot own one file.
    static func linkActivationForEveryone() throws(CommandLineError) {
        let path = packagedActivationDirectory + "/" + secretsActivationFile
        guard !exists(path) else { return }
        try link(path, to: try replacementDirectory() + "/" + Replacement.activationFile(secretsActivationFile), subject: "D-Bus")
    }

    /// Removes that link again, unless it stands in for a diverted gnome-keyring file (which
    /// ``giveBackGnomeKeyringToEveryone()`` puts back); says so.
    static func unlinkActivationForEveryone() {
        let path = packagedActivationDirectory + "/" + secretsActivationFile
        guard !exists(path + divertedSuffix) else { return }
        _ = removeLink(path, to: Replacement.activationFile(secretsActivationFile), subject: "D-Bus")
    }

    /// The same for the user running setup, in their own activation directory, when neither
    /// the system's nor theirs has a file for org.freedesktop.secrets.
    static func linkActivationForMe() throws(CommandLineError) {
        let path = userDataDirectory + "/dbus-1/services/" + secretsActivationFile
        guard !exists(packagedActivationDirectory + "/" + secretsActivationFile), !exists(path) else { return }
        try link(path, to: try replacementDirectory() + "/" + Replacement.activationFile(secretsActivationFile), subject: "D-Bus")
        try? KeychainProvider.reloadBusConfiguration()
    }

    /// Removes the user's link made by ``linkActivationForMe()``.
    static func unlinkActivationForMe() {
        if removeLink(userDataDirectory + "/dbus-1/services/" + secretsActivationFile,
                      to: Replacement.activationFile(secretsActivationFile), subject: "D-Bus") {
            try? KeychainProvider.reloadBusConfiguration()
        }
    }

    /// The activation file of org.freedesktop.secrets.
    private static let secretsActivationFile = "org.freedesktop.secrets.service"

    /// Whether there is anything at `path`: a file, or a link (even one that leads nowhere).
    static func exists(_ path: String) -> Bool {
        var status = stat()
        return lstat(path, &status) == 0
    }

    // MARK: - gnome-keyring running now

    /// Stops every gnome-keyring-daemon that owns org.freedesktop.secrets or waits in line for
    /// it (its SSH agent and certificate store, if it runs them, stop with it until the next
    /// login). Another provider that owns the name stops setup with its name.
    private static func stopRunningGnomeKeyring() throws(CommandLineError) {
        for _ in 0..<5 {
            guard let claimants = try? KeychainProvider.claimants(), !claimants.isEmpty else { return }
            let programs = claimants.map { (pid: Int32(bitPattern: $0), program: programName(of: Int32(bitPattern: $0))) }
            let keyrings = programs.filter { $0.program == "gnome-keyring-daemon" }
            guard !keyrings.isEmpty else {
                if let owner = programs.first, owner.program != "secretd" {
                    throw .failure(
                        "\(owner.program ?? "another program") (pid \(owner.pid)) provides the Secret Service; quit it, "
                            + "then run secretctl setup again", status: .failed)
                }
                return
            }
            for keyring in keyrings {
                kill(keyring.pid, SIGTERM)
                if waitUntilGone(keyring.pid) {
                    Terminal.writeOutput(
                        "gnome-keyring: stopped gnome-keyring-daemon (pid \(keyring.pid)), which provided the Secret Service "
                            + "(its SSH agent and certificates, if you use them, are back at your next login)\n")
                } else {
                    throw .failure("gnome-keyring-daemon (pid \(keyring.pid)) did not stop on SIGTERM", status: .failed)
                }
            }
        }
    }

    /// The file name of process `pid`'s program, from its command line's first word (secretd
    /// is not dumpable, so its /proc/PID/exe cannot be read even by its own user); nil when
    /// the process is gone or a zombie (which has no command line).
    private static func programName(of pid: Int32) -> String? {
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline"),
              let first = data.split(separator: 0, omittingEmptySubsequences: false).first, !first.isEmpty else { return nil }
        return String(decoding: first, as: UTF8.self).split(separator: "/").last.map(String.init)
    }

    /// Waits up to 5 s for process `pid` to end.
    private static func waitUntilGone(_ pid: Int32) -> Bool {
        for _ in 0..<50 {
            if programName(of: pid) == nil { return true }
            usleep(100_000)
        }
        return false
    }

    // MARK: - Files

    static var home: String { ProcessInfo.processInfo.environment["HOME"] ?? FileManager.default.homeDirectoryForCurrentUser.path }
    static var userDataDirectory: String {
        ProcessInfo.processInfo.environment["XDG_DATA_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? home + "/.local/share"
    }
    static var userConfigDirectory: String {
        ProcessInfo.processInfo.environment["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? home + "/.config"
    }
    static var userUnitDirectory: String { userConfigDirectory + "/systemd/user" }
    static var globalUnitDirectory: String { systemRoot + "/etc/systemd/user" }

    /// Masks those of `candidates` that are installed, with `systemctl` and `arguments` (the
    /// scope and verb), unless every one is masked in `directory` already; says which, for
    /// `whom`, as `subject` (`detail` follows when it masked them). The units it masks that
    /// were not masked before go into the file `record` in `directory`, so that `--undo`
    /// unmasks those only.
    static func maskUnits(
        _ candidates: [String], record: String, subject: String, arguments: [String], in directory: String, for whom: String,
        detail: String
    ) throws(CommandLineError) {
        let units = candidates.filter { FileManager.default.fileExists(atPath: packagedUnitDirectory + "/" + $0) }
        guard !units.isEmpty else { return }
        let newlyMasked = units.filter { !isMasked(directory + "/" + $0) }
        if newlyMasked.isEmpty {
            Terminal.writeOutput("\(subject): its units were already masked for \(whom)\n")
        } else {
            // Recorded first: a mask setup made and forgot would outlive --undo.
            let recorded = readMaskRecord(record, in: directory, units: candidates) ?? []
            try writeMaskRecord(recorded + newlyMasked.filter { !recorded.contains($0) }, record: record, subject: subject, in: directory)
            try runTool(["systemctl"] + arguments + units)
            Terminal.writeOutput("\(subject): masked \(newlyMasked.joined(separator: " and ")) for \(whom)\(detail)\n")
        }
    }

    /// Unmasks (`systemctl` and `arguments`) those of `candidates` that setup masked in
    /// `directory` (listed in its file `record`; without one, from a setup before the record
    /// existed, every masked one of gnome-keyring's, and none of the others), then removes the
    /// record; returns the units it unmasked. A unit that was masked before setup stays
    /// masked, and says so.
    @discardableResult
    static func unmaskUnits(
        _ candidates: [String], record: String, subject: String, arguments: [String], in directory: String
    ) throws(CommandLineError) -> [String] {
        let masked = candidates.filter { isMasked(directory + "/" + $0) }
        let recorded = readMaskRecord(record, in: directory, units: candidates)
        let ours = masked.filter { recorded?.contains($0) ?? (record == maskRecord) }
        if !ours.isEmpty { try runTool(["systemctl"] + arguments + ours) }
        if recorded != nil, unlink(directory + "/" + record) != 0, errno != ENOENT {
            throw .failure("cannot remove \(directory)/\(record): \(String(cString: strerror(errno)))", status: .failed)
        }
        for unit in masked where !ours.contains(unit) {
            Terminal.writeOutput("\(subject): left \(unit) masked, as it was before secretctl setup\n")
        }
        return ours
    }

    /// The file beside the masks that lists gnome-keyring's units setup masked, one per line
    /// after a comment (systemd reads no file without a unit's suffix).
    static let maskRecord = "secretctl-setup.masked"

    /// The units of `units` listed in `directory`'s file `record`; nil when there is none.
    private static func readMaskRecord(_ record: String, in directory: String, units: [String]) -> [String]? {
        guard let text = try? String(contentsOfFile: directory + "/" + record, encoding: .utf8) else { return nil }
        return text.split(separator: "\n").map { $0.trimmingWhitespace }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") && units.contains($0) }
    }

    /// Writes `units` as `directory`'s file `record`.
    private static func writeMaskRecord(_ units: [String], record: String, subject: String, in directory: String) throws(CommandLineError) {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw .failure("cannot create \(directory): \(error)", status: .failed)
        }
        let text = "# \(subject) units secretctl setup masked; secretctl setup --undo unmasks them and removes this file\n"
            + units.map { $0 + "\n" }.joined()
        try rewrite(directory + "/" + record, text)
    }

    /// Whether the activation file at `path` starts gnome-keyring.
    private static func isGnomeKeyrings(_ path: String) -> Bool {
        guard (try? FileManager.default.destinationOfSymbolicLink(atPath: path)) == nil,
              let text = try? String(contentsOfFile: path, encoding: .utf8) else { return false }
        return text.contains("gnome-keyring-daemon")
    }

    /// Whether `path` masks a unit (a link to /dev/null).
    static func isMasked(_ path: String) -> Bool {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: path)) == "/dev/null"
    }

    /// PREFIX/share/secretd, where `make install` put the files that replace gnome-keyring's.
    static func replacementDirectory(
        needing needed: [String] = [Replacement.autostartEntry] + gnomeKeyringActivationFiles.map(Replacement.activationFile)
    ) throws(CommandLineError) -> String {
        let share = systemRoot.isEmpty ? (OwnExecutable.prefix ?? "/usr") + "/share/secretd" : systemRoot + "/usr/share/secretd"
        guard let missing = needed.first(where: { !FileManager.default.fileExists(atPath: share + "/" + $0) }) else { return share }
        throw .failure("\(share)/\(missing) is missing: install the secretd package (or make install)", status: .failed)
    }

    /// Makes `path` a link to `target`, unless it is one already; a file of someone else's there
    /// is left alone, with a warning.
    static func link(_ path: String, to target: String, subject: String = "gnome-keyring") throws(CommandLineError) {
        if let existing = try? FileManager.default.destinationOfSymbolicLink(atPath: path), existing == target { return }
        if FileManager.default.fileExists(atPath: path) || (try? FileManager.default.destinationOfSymbolicLink(atPath: path)) != nil {
            Terminal.writeError("secretctl: \(path) exists and is not secretctl's: left as it is (\(subject) may still start through it)\n")
            return
        }
        let directory = String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)])
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: target)
        } catch {
            throw .failure("cannot link \(path) to \(target): \(error)", status: .failed)
        }
        Terminal.writeOutput("\(subject): \(path) -> \(target)\n")
    }

    /// Removes `path` if it is a link to secretd's `replacement` (wherever secretd is
    /// installed); says so, and whether it did.
    static func removeLink(_ path: String, to replacement: String, subject: String = "gnome-keyring") -> Bool {
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: path),
              target.hasSuffix("/share/secretd/" + replacement), unlink(path) == 0 else { return false }
        Terminal.writeOutput("\(subject): removed \(path)\n")
        return true
    }

    /// Replaces the text of `path` through a new file renamed over it, with the old file's mode.
    static func rewrite(_ path: String, _ text: String) throws(CommandLineError) {
        var status = stat()
        let mode = stat(path, &status) == 0 ? status.st_mode & 0o7777 : 0o644
        let temporary = path + ".secretctl-new"
        do {
            try Data(text.utf8).write(to: URL(fileURLWithPath: temporary))
        } catch {
            throw .failure("cannot write \(temporary): \(error)", status: .failed)
        }
        guard chmod(temporary, mode) == 0, rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw .failure("cannot replace \(path): \(reason)", status: .failed)
        }
    }
}
