// swift-tools-version:6.0
import PackageDescription

/// Upcoming-feature flags applied to every Swift target, as swift-log does.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "Keychain",
    products: [
        .library(name: "Keychain", targets: ["Keychain"]),
        .executable(name: "keychain-demo", targets: ["keychain-demo"]),
        .executable(name: "secretd", targets: ["secretd"]),
        .executable(name: "secretctl", targets: ["secretctl"]),
    ],
    targets: [
        // MARK: C libraries (Debian packages; see the Makefile's DEB_PACKAGES)
        .systemLibrary(
            name: "CLibSecret", pkgConfig: "libsecret-1",
            providers: [.apt(["libsecret-1-dev"])]),
        .systemLibrary(
            name: "CGio", pkgConfig: "gio-unix-2.0",
            providers: [.apt(["libglib2.0-dev"])]),
        .systemLibrary(
            name: "CGcrypt", pkgConfig: "libgcrypt",
            providers: [.apt(["libgcrypt20-dev"])]),
        .systemLibrary(
            name: "CSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(
            name: "CSystemd", pkgConfig: "libsystemd",
            providers: [.apt(["libsystemd-dev"])]),
        // gzip for KeePass databases (`secretctl import FILE.kdbx`; Sources/SecretCtl/Zlib.swift)
        .systemLibrary(
            name: "CZlib", pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(name: "CProcess"),
        // The login control protocol, one header shared with the PAM module (pam/pam_secretd.c).
        .systemLibrary(name: "CLoginControl"),
        .systemLibrary(
            name: "CAssuan", pkgConfig: "libassuan",
            providers: [.apt(["libassuan-dev"])]),
        // libFuzzer's driver entry point; only the fuzz build (`make fuzz`) links libFuzzer.
        .systemLibrary(name: "CFuzzer"),
        // libtss2 (ESYS, the TCTI loader, marshalling, response codes); pkg-config's tss2-esys
        // gives the include path, module.modulemap links the rest.
        .systemLibrary(
            name: "CTSS2", pkgConfig: "tss2-esys",
            providers: [.apt(["libtss2-dev"])]),

        // MARK: D-Bus values as Swift data, and their one bridge to GVariant (secretd, the
        // library beside libsecret, the test support and the benchmark build messages with it)
        .target(
            name: "DBusValues", dependencies: ["CGio"],
            swiftSettings: strictSettings),

        // MARK: Client library
        .target(
            name: "Keychain", dependencies: ["CLibSecret", "DBusValues", "KeychainCore", "Pinentry"],
            swiftSettings: strictSettings),

        // MARK: Starting child processes with a clean signal state and only the descriptors given
        .target(
            name: "ProcessSpawning", dependencies: ["CProcess"],
            swiftSettings: strictSettings),

        // MARK: Pure-Swift helpers shared by the library, secretd and secretctl (threads, text)
        .target(
            name: "KeychainCore", dependencies: ["CProcess"],
            swiftSettings: strictSettings),

        // MARK: Asking a person through pinentry (libassuan), for secretd and the library's login flow
        .target(
            name: "Pinentry", dependencies: ["CAssuan"],
            swiftSettings: strictSettings),

        // MARK: Cryptography (libgcrypt): secure memory, Argon2id, AES-GCM, the session's DH and AES-CBC
        .target(
            name: "SecretCrypto", dependencies: ["CGcrypt"],
            swiftSettings: strictSettings),

        // MARK: Sealing a keyring's master key to a TPM 2.0 (libtss2), for unlocking without a password
        .target(
            name: "TPMSealing", dependencies: ["CTSS2", "SecretCrypto"],
            swiftSettings: strictSettings),

        // MARK: secretd's storage (SQLite, sealed with SecretCrypto; no D-Bus)
        .target(
            name: "SecretStore", dependencies: ["CSQLite", "KeychainCore", "SecretCrypto"],
            swiftSettings: strictSettings),

        // MARK: secretd's D-Bus object layer
        .target(
            name: "SecretService", dependencies: ["CGio", "CLoginControl", "CProcess", "CSystemd", "DBusValues", "KeychainCore", "Pinentry", "SecretCrypto", "SecretStore", "SecretSync", "TPMSealing"],
            swiftSettings: strictSettings),

        // MARK: Reading gnome-keyring's keyring files (for `secretctl import gnome-keyring`)
        .target(
            name: "GnomeKeyringFormat", dependencies: ["SecretCrypto"],
            swiftSettings: strictSettings),

        // MARK: Sync between machines (issue 24): the repository's item files, the merge rule, the
        // hybrid logical clock, and the git transport; no D-Bus
        .target(
            name: "SecretSync", dependencies: ["KeychainCore", "ProcessSpawning", "SecretCrypto", "SecretStore"],
            swiftSettings: strictSettings),

        // MARK: The command line (SecretCrypto for export files; not SecretStore, so secretctl
        // does not load SQLite)
        .target(
            name: "SecretCtl", dependencies: ["CZlib", "GnomeKeyringFormat", "KeychainCore", "Keychain", "ProcessSpawning", "SecretCrypto"],
            swiftSettings: strictSettings),

        // MARK: Executables
        .executableTarget(
            name: "secretd", dependencies: ["CProcess", "KeychainCore", "SecretCrypto", "SecretService", "SecretStore"],
            swiftSettings: strictSettings),
        .executableTarget(
            name: "secretctl", dependencies: ["SecretCtl"],
            swiftSettings: strictSettings),
        .executableTarget(
            name: "keychain-bench", dependencies: ["CGio", "CSystemd", "DBusValues", "Keychain", "KeychainCore", "ProcessSpawning"], path: "Sources/keychain-bench",
            swiftSettings: strictSettings),
        .executableTarget(
            name: "keychain-demo", dependencies: ["Keychain"],
            swiftSettings: strictSettings),
        // The floor of a bulk import: the store's own insert of N items (bench/bulk.sh).
        .executableTarget(
            name: "keychain-store-floor", dependencies: ["SecretCrypto", "SecretStore"],
            swiftSettings: strictSettings),
        // Replays fuzz inputs through the parsers of outside input; drives libFuzzer in the
        // fuzz build (`make fuzz`; see "Fuzzing" in README.md).
        .executableTarget(
            name: "keychain-fuzz", dependencies: ["CFuzzer", "DBusValues", "GnomeKeyringFormat", "KeychainCore", "SecretCrypto", "SecretCtl", "SecretService", "SecretStore", "SecretSync", "TPMSealing"],
            swiftSettings: strictSettings),

        // MARK: Test support and tests
        .target(
            name: "KeychainTestSupport", dependencies: ["CGio", "DBusValues", "Keychain", "KeychainCore", "ProcessSpawning"],
            swiftSettings: strictSettings),
        .testTarget(
            name: "SecretCryptoTests", dependencies: ["SecretCrypto"],
            swiftSettings: strictSettings),
        // Against a real swtpm per test (swtpm, swtpm-tools and tpm2-tools in DEB_TEST).
        .testTarget(
            name: "TPMSealingTests", dependencies: ["KeychainTestSupport", "SecretCrypto", "TPMSealing"],
            swiftSettings: strictSettings),
        .testTarget(
            name: "SecretSyncTests", dependencies: ["KeychainTestSupport", "SecretCrypto", "SecretStore", "SecretSync"],
            swiftSettings: strictSettings),
        // Fixtures/: a database written by each schema version, for the migration tests.
        .testTarget(
            name: "SecretStoreTests", dependencies: ["SecretCrypto", "SecretStore"], resources: [.copy("Fixtures")],
            swiftSettings: strictSettings),
        .testTarget(
            name: "GnomeKeyringFormatTests", dependencies: ["GnomeKeyringFormat", "KeychainTestSupport", "SecretCrypto"],
            swiftSettings: strictSettings),
        .testTarget(
            name: "SecretCtlTests", dependencies: ["KeychainCore", "ProcessSpawning", "SecretCtl", "SecretCrypto", "Keychain"],
            swiftSettings: strictSettings),
        .testTarget(
            name: "SecretServiceTests", dependencies: ["CSystemd", "DBusValues", "KeychainCore", "KeychainTestSupport", "SecretCrypto", "SecretStore", "SecretService", "SecretSync"],
            swiftSettings: strictSettings),
        .testTarget(
            name: "KeychainTests", dependencies: ["Keychain", "KeychainCore", "KeychainTestSupport"],
            swiftSettings: strictSettings),
        .testTarget(
            name: "KeychainFuzzTests", dependencies: ["keychain-fuzz", "KeychainCore", "KeychainTestSupport"],
            swiftSettings: strictSettings),
    ],
    swiftLanguageModes: [.v6]
)
