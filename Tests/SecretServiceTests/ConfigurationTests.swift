import Foundation
import KeychainTestSupport
@testable import SecretService
import Testing

@Suite struct ConfigurationTests {
    @Test("secretd.conf: comments, blank lines and lock-after-idle")
    func parse() throws {
        let text = """
            # lock when nobody used the keyring for ten minutes
            lock-after-idle = 600   # seconds

            """
        #expect(try Configuration.parse(text, file: "f").lockAfterIdle == 600)
        #expect(try Configuration.parse("", file: "f") == Configuration())
        #expect(try Configuration.parse("pinentry = /usr/bin/pinentry-tty", file: "f").pinentry == "/usr/bin/pinentry-tty")
        // CRLF line ends (one Character in Swift) end lines too.
        #expect(try Configuration.parse("lock-after-idle = 60\r\npinentry = /usr/bin/pinentry-tty\r\n", file: "f").lockAfterIdle == 60)
        #expect(throws: ConfigurationError(file: "f", line: 2, message: "unknown setting 'x'")) {
            try Configuration.parse("\r\nx = 1\r\n", file: "f")
        }
        #expect(throws: ConfigurationError(file: "f", line: 1, message: "pinentry takes an absolute path")) {
            try Configuration.parse("pinentry = pinentry-tty", file: "f")
        }
    }

    @Test("portal-frontends: unit and exe identities; the default is xdg-desktop-portal's")
    func portalFrontends() throws {
        #expect(Configuration().portalFrontends.map(\.description)
                == ["unit:xdg-desktop-portal.service", "exe:/usr/libexec/xdg-desktop-portal"])
        let parsed = try Configuration.parse("portal-frontends = exe:/opt/portal/bin/frontend , unit:my-portal.service", file: "f")
        #expect(parsed.portalFrontends.map(\.description) == ["exe:/opt/portal/bin/frontend", "unit:my-portal.service"])
        for bad in ["portal-frontends = flatpak:org.example.App", "portal-frontends = exe:relative", "portal-frontends = exe:/x,,unit:y"] {
            #expect(throws: ConfigurationError(
                file: "f", line: 1,
                message: "portal-frontends takes a comma-separated list of unit:NAME and exe:/PATH identities")) {
                try Configuration.parse(bad, file: "f")
            }
        }
    }

    @Test("tpm-tcti: a TCTI configuration, libtss2's default when not set")
    func tpmTCTI() throws {
        #expect(Configuration().tpmTCTI == nil)
        #expect(try Configuration.parse("tpm-tcti = swtpm:path=/run/swtpm/tpm", file: "f").tpmTCTI == "swtpm:path=/run/swtpm/tpm")
        #expect(throws: ConfigurationError(
            file: "f", line: 1, message: "tpm-tcti takes a TCTI such as device:/dev/tpmrm0 or swtpm:port=2321")) {
            try Configuration.parse("tpm-tcti = device: /dev/tpmrm0", file: "f")
        }
    }

    @Test("sync-interval: seconds, at least 1; 300 when not set")
    func syncInterval() throws {
        #expect(Configuration().syncInterval == 300)
        #expect(try Configuration.parse("sync-interval = 60", file: "f").syncInterval == 60)
        for bad in ["0", "-5", "5m"] {
            #expect(throws: ConfigurationError(file: "f", line: 1, message: "sync-interval takes a number of seconds, at least 1")) {
                try Configuration.parse("sync-interval = \(bad)", file: "f")
            }
        }
    }

    @Test("unknown settings and bad values are errors naming file and line")
    func errors() {
        #expect(throws: ConfigurationError(file: "f", line: 2, message: "unknown setting 'lock-after'")) {
            try Configuration.parse("\nlock-after = 5", file: "f")
        }
        #expect(throws: ConfigurationError(file: "f", line: 1, message: "lock-after-idle takes a number of seconds")) {
            try Configuration.parse("lock-after-idle = soon", file: "f")
        }
        #expect(throws: ConfigurationError(file: "f", line: 1, message: "expected 'key = value'")) {
            try Configuration.parse("lock-after-idle", file: "f")
        }
    }

    @Test("secretd locks its keyrings after lock-after-idle seconds without a call")
    func idleLock() throws {
        let fixture = try SecretdFixture()
        try fixture.writeConfiguration("lock-after-idle = 1\n")
        // Calls count as activity, so the test makes none: it waits for the signal of the lock.
        let recorder = try SignalRecorder(address: fixture.bus.address)
        let daemon = try fixture.start()
        let login = "/org/freedesktop/secrets/collection/login"
        #expect(recorder.wait(for: "PropertiesChanged", path: login, containing: "'Locked': <true>") != nil, "\(recorder.signals)")
        #expect(try fixture.call(login, "org.freedesktop.DBus.Properties", "Get", "('org.freedesktop.Secret.Collection', 'Locked')")
                == "(<true>,)")
        #expect(daemon.log.contains("locked the login keyring after 1 s idle"))
        daemon.stop()
    }

    @Test("a bad secretd.conf stops the start with one line naming file and line")
    func badFile() throws {
        let fixture = try SecretdFixture()
        try fixture.writeConfiguration("lock-after-idle = 5\nfrobnicate = yes\n")
        let daemon = try fixture.start(waitForName: false)
        #expect(daemon.waitForExit(timeout: 20) == 1)
        #expect(daemon.log == "secretd: bad configuration: \(fixture.configDirectory.path)/secretd.conf:2: unknown setting 'frobnicate'\n")
    }
}
