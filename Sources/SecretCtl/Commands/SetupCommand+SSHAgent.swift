import FoundationEssentials
import Glibc
import KeychainCore

// How `secretctl setup` makes secretd the user's SSH agent, and how `--undo` (or setup
// `--no-ssh-agent`) gives the agent back. On Debian the agents before secretd's set
// SSH_AUTH_SOCK like this (read from their packages):
//   - gcr-ssh-agent (package gcr on Debian 12, gcr4 on Debian 13): user units
//     gcr-ssh-agent.socket (ListenStream=%t/gcr/ssh, in sockets.target) and .service, both
//     enabled for every user by the package; gcr4's socket also runs
//     `systemctl --user set-environment SSH_AUTH_SOCK=%t/gcr/ssh` once it listens, which would
//     replace what environment.d gives the user manager;
//   - OpenSSH's own user agent (openssh-client on Debian 13): ssh-agent.socket, enabled for
//     every user, ListenStream=%t/openssh_agent, and the same set-environment as gcr4's;
//   - gnome-keyring's agent: the XDG autostart entry gnome-keyring-ssh.desktop runs
//     `gnome-keyring-daemon --start --components=ssh` in GNOME, Unity and MATE sessions, and the
//     session manager exports the SSH_AUTH_SOCK it prints.
// So setup masks gcr's and OpenSSH's units (recorded, as gnome-keyring's are), hides gnome-keyring's
// autostart entry, and puts secretd's socket into each kind of session:
//   - the user manager and desktops: an environment.d file,
//     SSH_AUTH_SOCK=${SSH_AUTH_SOCK:-${XDG_RUNTIME_DIR}/secretd/ssh-agent};
//   - console and su logins: the PAM profile secretd-ssh-agent (pam_secretd.so ssh_agent
//     ignore=sshd), which sets it in the PAM environment unless it holds one already;
//   - ssh logins: /etc/profile.d/secretd-ssh-agent.sh, in login shells, unless sshd set it.
//     sshd copies the PAM environment over the SSH_AUTH_SOCK of an agent forwarded with
//     `ssh -A` (OpenSSH session.c, do_setup_env), and it opens the PAM session before the
//     client asks for forwarding, so no PAM module can tell; hence ignore=sshd.
// `setup` without --system does the first of these for its user only; the other two are the
// system's (setup --system).

extension SetupCommand {
    /// An SSH agent of the system's whose user units setup masks, with the file beside the
    /// masks that lists the ones it masked.
    struct ReplacedAgent {
        /// Its name in what setup says.
        let subject: String
        /// Its user units.
        let units: [String]
        /// The record of the units setup masked.
        let record: String
    }

    /// The agents setup replaces by masking their units: gcr's, and OpenSSH's own user agent
    /// (Debian 13's openssh-client enables ssh-agent.socket for every user; it runs
    /// `systemctl --user set-environment SSH_AUTH_SOCK=%t/openssh_agent`, as gcr4's does).
    static let replacedAgents = [
        ReplacedAgent(subject: "gcr-ssh-agent", units: ["gcr-ssh-agent.socket", "gcr-ssh-agent.service"],
                      record: "secretctl-setup-ssh-agent.masked"),
        ReplacedAgent(subject: "OpenSSH's ssh-agent", units: ["ssh-agent.socket", "ssh-agent.service"],
                      record: "secretctl-setup-openssh-agent.masked"),
    ]
    /// The pam-auth-update profile whose session line points SSH_AUTH_SOCK at secretd's agent.
    static let pamAgentProfileName = "secretd-ssh-agent"
    /// That profile, where libpam-secretd installs it.
    static var pamAgentProfile: String { systemRoot + "/usr/share/pam-configs/" + pamAgentProfileName }
    /// The module option of that line.
    static let sshAgentOption = "ssh_agent"
    /// gnome-keyring's autostart entry for its SSH agent.
    static var gnomeKeyringSSHAutostartEntry: String { systemRoot + "/etc/xdg/autostart/gnome-keyring-ssh.desktop" }
    /// The comment `setup --system` writes above the line it adds to that entry.
    static let sshAutostartMarker = "# Added by secretctl setup --system (secretd is the SSH agent); secretctl setup --system --undo removes it"
    /// The name of secretd's environment.d file.
    static let environmentFileName = "60-secretd-ssh-agent.conf"
    /// Where `setup --system` links that file for every user's manager.
    static var globalEnvironmentFile: String { systemRoot + "/etc/environment.d/" + environmentFileName }
    /// Where `setup` links it for the user running it.
    static var userEnvironmentFile: String { userConfigDirectory + "/environment.d/" + environmentFileName }
    /// Where `setup --system` links the login shells' script.
    static var profileScript: String { systemRoot + "/etc/profile.d/secretd-ssh-agent.sh" }

    /// The files of PREFIX/share/secretd that setup links for the agent.
    enum AgentReplacement {
        static let environmentFile = "environment.d/60-secretd-ssh-agent.conf"
        static let profileScript = "profile.d/secretd-ssh-agent.sh"
        static let autostartEntry = "autostart/gnome-keyring-ssh.desktop"
        static let all = [environmentFile, profileScript, autostartEntry]
    }

    // MARK: - One user

    /// Makes secretd the SSH agent of the user running setup: gcr's units masked (not stopped:
    /// the shells of this login that use gcr's agent keep it until they end), gnome-keyring's
    /// autostart entry hidden, secretd's environment.d file linked, and the running user
    /// manager's SSH_AUTH_SOCK pointed at secretd's socket unless it names another agent than
    /// theirs; says what it did.
    static func takeOverSSHAgentForMe() throws(CommandLineError) {
        let share = try replacementDirectory(needing: AgentReplacement.all)
        for agent in replacedAgents {
            try maskUnits(
                agent.units, record: agent.record, subject: agent.subject, arguments: ["--user", "mask"],
                in: userUnitDirectory, for: "you", detail: " (from your next login; shells that use it now keep it until they end)")
        }
        if FileManager.default.fileExists(atPath: gnomeKeyringSSHAutostartEntry) {
            try link(userConfigDirectory + "/autostart/gnome-keyring-ssh.desktop", to: share + "/" + AgentReplacement.autostartEntry,
                     subject: "gnome-keyring's SSH agent")
        }
        try link(userEnvironmentFile, to: share + "/" + AgentReplacement.environmentFile, subject: "ssh")
        if let socket = agentSocket {
            let current = managerEnvironment()["SSH_AUTH_SOCK"]
            if current == nil || current.map(isReplacedAgent) == true {
                try runTool(["systemctl", "--user", "set-environment", "SSH_AUTH_SOCK=" + socket])
                Terminal.writeOutput("ssh: SSH_AUTH_SOCK=\(socket) in your user manager from now on\n")
            } else if current != socket {
                Terminal.writeOutput("ssh: your user manager's SSH_AUTH_SOCK names another agent (\(current ?? "")): left as it is\n")
            }
        }
        Terminal.writeOutput(
            "ssh: secretd is your SSH agent in your desktop and user services (environment.d); in ssh and console logins "
                + "once an administrator ran secretctl setup --system, or in your shell with: "
                + "[ -n \"$SSH_AUTH_SOCK\" ] || eval \"$(secretctl ssh-agent env)\"\n")
    }

    /// Gives the SSH agent back to the user running setup --undo (or setup --no-ssh-agent):
    /// removes what ``takeOverSSHAgentForMe()`` linked, unsets the user manager's SSH_AUTH_SOCK
    /// when it is secretd's and setup had linked the user's environment.d file (not when it
    /// came from setup --system's), unmasks the gcr units it masked and starts gcr's socket
    /// again when it is enabled; says what it did.
    static func giveBackSSHAgentToMe() throws(CommandLineError) {
        let linked = removeLink(userEnvironmentFile, to: AgentReplacement.environmentFile, subject: "ssh")
        var changed = linked
        changed = removeLink(userConfigDirectory + "/autostart/gnome-keyring-ssh.desktop", to: AgentReplacement.autostartEntry,
                             subject: "gnome-keyring's SSH agent") || changed
        if linked, let socket = agentSocket, managerEnvironment()["SSH_AUTH_SOCK"] == socket {
            try runTool(["systemctl", "--user", "unset-environment", "SSH_AUTH_SOCK"])
            Terminal.writeOutput("ssh: unset SSH_AUTH_SOCK (secretd's) in your user manager\n")
            changed = true
        }
        var unmasked: [String] = []
        for agent in replacedAgents {
            unmasked += try unmaskUnits(
                agent.units, record: agent.record, subject: agent.subject, arguments: ["--user", "unmask"], in: userUnitDirectory)
        }
        for unit in unmasked where unit.hasSuffix(".socket") && succeeds(["systemctl", "--user", "--quiet", "is-enabled", unit]) {
            try runTool(["systemctl", "--user", "start", unit])
        }
        if changed || !unmasked.isEmpty {
            Terminal.writeOutput(
                "ssh: your SSH agent is as it was before secretctl setup (gcr-ssh-agent or gnome-keyring's, where installed, "
                    + "from your next login)\n")
        }
    }

    // MARK: - Every user

    /// Makes secretd every user's SSH agent from their next login: the PAM profile
    /// secretd-ssh-agent, gcr's units masked for every user, gnome-keyring's autostart entry
    /// hidden, the environment.d file and the login shells' script linked; says what it did.
    static func takeOverSSHAgentForEveryone() throws(CommandLineError) {
        let share = try replacementDirectory(needing: AgentReplacement.all)
        if FileManager.default.fileExists(atPath: pamAgentProfile) {
            let wasEnabled = pamAgentProfileInForce()
            try runTool(["pam-auth-update", "--enable", pamAgentProfileName])
            guard pamAgentProfileInForce() else {
                throw .failure("pam-auth-update did not add pam_secretd.so \(sshAgentOption) to \(pamSessionFile); see pam-auth-update(8)",
                               status: .failed)
            }
            Terminal.writeOutput(wasEnabled
                ? "PAM: the \(pamAgentProfileName) profile was already enabled\n"
                : "PAM: enabled the \(pamAgentProfileName) profile (pam-auth-update): console and su logins get SSH_AUTH_SOCK "
                    + "of secretd's agent unless they have one\n")
        } else {
            Terminal.writeError("secretctl: \(pamAgentProfile) is missing (an older libpam-secretd): console and su logins "
                                + "do not get SSH_AUTH_SOCK from PAM\n")
        }
        for agent in replacedAgents {
            try maskUnits(
                agent.units, record: agent.record, subject: agent.subject, arguments: ["--global", "mask"],
                in: globalUnitDirectory, for: "every user", detail: " (/etc/systemd/user; secretd is the SSH agent)")
        }
        if let text = try? String(contentsOfFile: gnomeKeyringSSHAutostartEntry, encoding: .utf8),
           !text.split(separator: "\n").contains(Substring(sshAutostartMarker)) {
            try rewrite(gnomeKeyringSSHAutostartEntry,
                        text + (text.hasSuffix("\n") ? "" : "\n") + sshAutostartMarker + "\n" + autostartHidden + "\n")
            Terminal.writeOutput("gnome-keyring's SSH agent: hid its autostart entry (\(gnomeKeyringSSHAutostartEntry): \(autostartHidden))\n")
        }
        try link(globalEnvironmentFile, to: share + "/" + AgentReplacement.environmentFile, subject: "ssh")
        try link(profileScript, to: share + "/" + AgentReplacement.profileScript, subject: "ssh")
        Terminal.writeOutput(
            "ssh: from each user's next login, SSH_AUTH_SOCK points at secretd's agent ($XDG_RUNTIME_DIR/secretd/ssh-agent) "
                + "unless the session has one (an agent forwarded with ssh -A is kept)\n")
    }

    /// Gives the SSH agent back to every user: the reverse of ``takeOverSSHAgentForEveryone()``,
    /// for what it finds of it; says what it did.
    static func giveBackSSHAgentToEveryone() throws(CommandLineError) {
        var changed = false
        if pamAgentProfileInForce() {
            try runTool(["pam-auth-update", "--disable", pamAgentProfileName])
            guard !pamAgentProfileInForce() else {
                throw .failure("pam-auth-update left pam_secretd.so \(sshAgentOption) in \(pamSessionFile); see pam-auth-update(8)",
                               status: .failed)
            }
            Terminal.writeOutput("PAM: disabled the \(pamAgentProfileName) profile (pam-auth-update)\n")
            changed = true
        }
        changed = removeLink(globalEnvironmentFile, to: AgentReplacement.environmentFile, subject: "ssh") || changed
        changed = removeLink(profileScript, to: AgentReplacement.profileScript, subject: "ssh") || changed
        if let text = try? String(contentsOfFile: gnomeKeyringSSHAutostartEntry, encoding: .utf8) {
            var lines = text.components(separatedBy: "\n")
            if let marker = lines.firstIndex(of: sshAutostartMarker) {
                let end = marker + 1 < lines.count && lines[marker + 1] == autostartHidden ? marker + 2 : marker + 1
                lines.removeSubrange(marker..<end)
                try rewrite(gnomeKeyringSSHAutostartEntry, lines.joined(separator: "\n"))
                Terminal.writeOutput("gnome-keyring's SSH agent: its autostart entry is as its package installed it\n")
                changed = true
            }
        }
        var unmasked: [String] = []
        for agent in replacedAgents {
            unmasked += try unmaskUnits(
                agent.units, record: agent.record, subject: agent.subject, arguments: ["--global", "unmask"],
                in: globalUnitDirectory)
        }
        if changed || !unmasked.isEmpty {
            Terminal.writeOutput("ssh: every user's SSH agent is as it was before secretctl setup --system, from their next login\n")
        }
    }

    // MARK: - Helpers

    /// Whether the session stack holds the line of the secretd-ssh-agent profile.
    static func pamAgentProfileInForce() -> Bool {
        sessionLines().contains { $0.contains("pam_secretd.so") && $0.contains(Substring(sshAgentOption)) }
    }

    /// secretd's agent socket in this user's runtime directory; nil without $XDG_RUNTIME_DIR.
    private static var agentSocket: String? {
        guard let runtime = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") else { return nil }
        return runtime + "/" + SSHAgentNames.directoryName + "/" + SSHAgentNames.socketName
    }

    /// Whether `socket` is the agent socket of gcr-ssh-agent, OpenSSH's user agent or
    /// gnome-keyring, which setup replaces (the user manager keeps gcr's after its socket is stopped).
    private static func isReplacedAgent(_ socket: String) -> Bool {
        socket.hasSuffix("/gcr/ssh") || socket.hasSuffix("/openssh_agent") || socket.hasSuffix("/keyring/ssh")
    }

    /// The user manager's environment (`systemctl --user show-environment`); empty when it
    /// cannot be read.
    private static func managerEnvironment() -> [String: String] {
        guard let text = output(["systemctl", "--user", "show-environment"]) else { return [:] }
        var environment: [String: String] = [:]
        for line in text.split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            environment[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return environment
    }
}
