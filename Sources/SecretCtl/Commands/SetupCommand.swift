import FoundationEssentials
import Glibc
import KeychainCore
import ProcessSpawning

/// `secretctl setup`: makes secretd the login keyring, for every user (`--system`, as root, after
/// `make install PREFIX=/usr`) or for the user running it, and keeps gnome-keyring, where it is
/// installed, from providing the Secret Service (SetupCommand+GnomeKeyring.swift); unless
/// `--no-ssh-agent`, it also makes secretd the SSH agent in place of gcr-ssh-agent and
/// gnome-keyring's (SetupCommand+SSHAgent.swift); `--undo` reverts either. Each step is an ordinary tool (pam-auth-update, systemctl, dpkg-divert) or
/// a link, and what changed is printed.
enum SetupCommand: Verb {
    /// `--system`: for every user, as root.
    static let system = LongOption<Bool>(
        "system", help: "For every user: enable pam_secretd.so (pam-auth-update) and the user units globally, turn gnome-keyring's Secret Service off; needs root.")
    /// `--undo`: revert what setup enabled.
    static let undo = LongOption<Bool>("undo", help: "Revert what setup (or setup --system) enabled.")
    /// `--no-ssh-agent`: the Secret Service only; an SSH agent setup made earlier is given back.
    static let noSSHAgent = LongOption<Bool>(
        "no-ssh-agent",
        help: "Leave the SSH agent as it is (gcr-ssh-agent or gnome-keyring's): do not point SSH_AUTH_SOCK at secretd's; "
            + "what an earlier setup changed for the agent is given back.")

    static let spec = CommandSpec(
        name: "setup", abstract: "Make secretd your login keyring and switch gnome-keyring's Secret Service off (--system: every user's, as root); --undo reverts it.",
        arguments: [], options: [system, undo, noSSHAgent],
        examples: ["sudo secretctl setup --system", "secretctl setup", "secretctl setup --no-ssh-agent",
                   "sudo secretctl setup --system --undo"])

    /// The pam-auth-update profile `make install` puts in place.
    static var pamProfile: String { systemRoot + "/usr/share/pam-configs/secretd" }
    /// The PAM file whose session stack shows whether the profile is in force.
    static var pamSessionFile: String { systemRoot + "/etc/pam.d/common-session" }
    /// The user units: the login socket pam_secretd.so connects to, and the daemon.
    static let units = ["secretd.socket", "secretd.service"]

    /// Where setup finds the system's files: the root directory, except in a debug build run
    /// with ``TestHooks/setupRoot`` set, where it is that directory (a test's temporary tree).
    static var systemRoot: String {
        #if DEBUG
        if let root = ProcessInfo.processInfo.environment[TestHooks.setupRoot], root.hasPrefix("/") { return root }
        #endif
        return ""
    }

    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        let undo = parsed[Self.undo]
        let agent = !parsed[Self.noSSHAgent]
        if parsed[Self.system] {
            guard geteuid() == 0 else {
                throw .failure("setup --system changes /etc/pam.d and /etc/systemd; run it as root (sudo secretctl setup --system)",
                               status: .accessDenied)
            }
            try undo ? disableForEveryone() : enableForEveryone(agent: agent)
        } else {
            try undo ? disableForMe() : enableForMe(agent: agent)
        }
    }

    // MARK: - Every user

    private static func enableForEveryone(agent: Bool) throws(CommandLineError) {
        guard FileManager.default.fileExists(atPath: pamProfile) else {
            throw .failure("\(pamProfile) is missing: install libpam-secretd first (or make install PREFIX=/usr)", status: .failed)
        }
        let wasEnabled = pamProfileInForce()
        try runTool(["pam-auth-update", "--enable", "secretd"])
        guard pamProfileInForce() else {
            throw .failure("pam-auth-update did not add pam_secretd.so to \(pamSessionFile) (were the common-* files edited "
                           + "by hand? see pam-auth-update(8)); nothing else was changed", status: .failed)
        }
        Terminal.writeOutput(wasEnabled
            ? "PAM: the secretd profile was already enabled\n"
            : "PAM: enabled the secretd profile (pam-auth-update): pam_secretd.so now runs in /etc/pam.d/common-auth, "
                + "common-session and common-password\n")
        try switchOffGnomeKeyringForEveryone()
        try linkActivationForEveryone()
        try runTool(["systemctl", "--global", "enable"] + units)
        Terminal.writeOutput("systemd: enabled \(units.joined(separator: " and ")) for every user (/etc/systemd/user)\n")
        try agent ? takeOverSSHAgentForEveryone() : giveBackSSHAgentToEveryone()
        Terminal.writeOutput(
            "Each user's login keyring is created from their password at their next password login, and unlocked at "
                + "every login after; logins without a password leave it locked (secretctl unlock). Undo: secretctl setup --system --undo\n")
    }

    /// Says only what it changed: the secretd package's removal runs it whether or not setup
    /// --system was run.
    private static func disableForEveryone() throws(CommandLineError) {
        let wasInForce = pamProfileInForce()
        if wasInForce || FileManager.default.fileExists(atPath: pamProfile) {
            try runTool(["pam-auth-update", "--disable", "secretd"])
        }
        guard !pamProfileInForce() else {
            throw .failure("pam-auth-update left pam_secretd.so in \(pamSessionFile); see pam-auth-update(8)", status: .failed)
        }
        if wasInForce {
            Terminal.writeOutput("PAM: disabled the secretd profile (pam-auth-update): pam_secretd.so no longer runs at login\n")
        }
        if units.contains(where: enabledGlobally) {
            try runTool(["systemctl", "--global", "disable"] + units)
            Terminal.writeOutput(
                "systemd: disabled \(units.joined(separator: " and ")) for every user; keyrings in ~/.local/share/secretd are kept\n")
        }
        unlinkActivationForEveryone()
        try giveBackGnomeKeyringToEveryone()
        try giveBackSSHAgentToEveryone()
    }

    /// Whether `unit` is enabled for every user: a link to it in a .wants directory of
    /// /etc/systemd/user.
    private static func enabledGlobally(_ unit: String) -> Bool {
        let directory = globalUnitDirectory
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return entries.contains { entry in
            var status = stat()
            return entry.hasSuffix(".wants") && lstat(directory + "/" + entry + "/" + unit, &status) == 0
        }
    }

    // MARK: - This user

    private static func enableForMe(agent: Bool) throws(CommandLineError) {
        try switchOffGnomeKeyringForMe()
        try linkActivationForMe()
        try runTool(["systemctl", "--user", "enable", "--now"] + units)
        Terminal.writeOutput(
            "systemd: enabled and started \(units.joined(separator: " and ")) for you: secretd starts at each login and "
                + "on the first client call\n")
        try agent ? takeOverSSHAgentForMe() : giveBackSSHAgentToMe()
        if !pamProfileInForce() {
            Terminal.writeOutput(
                "PAM: pam_secretd.so is not enabled on this system, so your login keyring is not unlocked at login; "
                    + "unlock it with: secretctl unlock (an administrator can run: secretctl setup --system)\n")
        }
    }

    private static func disableForMe() throws(CommandLineError) {
        try runTool(["systemctl", "--user", "disable", "--now"] + units)
        Terminal.writeOutput("systemd: stopped and disabled \(units.joined(separator: " and ")) for you; your keyrings are kept\n")
        unlinkActivationForMe()
        try giveBackGnomeKeyringToMe()
        try giveBackSSHAgentToMe()
    }

    // MARK: - Helpers

    /// Whether pam_secretd.so is in the session stack that every login includes.
    static func pamProfileInForce() -> Bool {
        sessionLines().contains { $0.contains("pam_secretd.so") && !$0.contains(Substring(sshAgentOption)) }
    }

    /// The words of each line of the session stack that is not a comment.
    static func sessionLines() -> [[Substring]] {
        guard let text = try? String(contentsOfFile: pamSessionFile, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").filter { !$0.hasPrefix("#") }
            .map { $0.split(whereSeparator: { $0 == " " || $0 == "\t" }) }
    }

    /// Whether `arguments` runs and exits 0 (its output on standard error, standard input
    /// closed); for questions such as `systemctl is-enabled`.
    static func succeeds(_ arguments: [String]) -> Bool {
        guard case .success(let pid) = ProcessSpawning.spawn(
            arguments, environment: ProcessInfo.processInfo.environment, descriptors: [(1, 2), (2, 2)]) else { return false }
        return ProcessSpawning.waitForExit(pid) == 0
    }

    /// What `arguments` writes on standard output when it exits 0 (read through a pipe); nil
    /// otherwise.
    static func output(_ arguments: [String]) -> String? {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { return nil }
        let spawned = ProcessSpawning.spawn(
            arguments, environment: ProcessInfo.processInfo.environment, descriptors: [(1, ends[1]), (2, 2)])
        close(ends[1])
        defer { close(ends[0]) }
        guard case .success(let pid) = spawned else { return nil }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(ends[0], &buffer, buffer.count)
            if count > 0 {
                bytes += buffer[..<count]
            } else if count == 0 || errno != EINTR {
                break
            }
        }
        return ProcessSpawning.waitForExit(pid) == 0 ? String(decoding: bytes, as: UTF8.self) : nil
    }

    /// Runs a tool with this environment, its output on standard error (standard output is
    /// for what setup says); a failure stops setup with the tool's name and status.
    static func runTool(_ arguments: [String]) throws(CommandLineError) {
        var environment = ProcessInfo.processInfo.environment
        environment["DEBIAN_FRONTEND"] = "noninteractive"
        switch ProcessSpawning.spawn(arguments, environment: environment, descriptors: [(0, 0), (1, 2), (2, 2)]) {
        case .failure(let error):
            throw .failure("cannot run \(arguments[0]): \(error)", status: .failed)
        case .success(let pid):
            let status = ProcessSpawning.waitForExit(pid)
            guard status == 0 else {
                throw .failure("\(arguments.joined(separator: " ")) failed (exit status \(status))", status: .failed)
            }
        }
    }
}
