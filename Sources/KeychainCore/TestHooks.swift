/// The environment variables through which tests reach into a debug build of secretd; release
/// builds read none of them.
package enum TestHooks {
    /// Names a file holding a number of seconds that secretd's password clock runs ahead of the
    /// system clock, so a test steps over the wait after a wrong password instead of sleeping.
    package static let passwordClockOffsetFile = "SECRETD_TEST_CLOCK_OFFSET_FILE"
    /// Seconds secretd waits for the TPM before it gives up (instead of 20), so a test of a
    /// TPM that never answers does not wait that long.
    package static let tpmTimeout = "SECRETD_TEST_TPM_TIMEOUT"
    /// Seconds one git command of sync may take before it is killed (instead of 120), so a
    /// test of a remote that never answers does not wait that long.
    package static let gitTimeout = "SECRETD_TEST_GIT_TIMEOUT"
    /// A directory `secretctl setup` takes for the root of the system's files (/etc, /usr/lib,
    /// /usr/share), so that a test runs setup and --undo against a temporary tree.
    package static let setupRoot = "SECRETCTL_TEST_ROOT"
    /// Seconds between secretd's checks whether an automatic backup is due, the first one too
    /// (instead of 60 after start, then 300), so a test sees the timer take them at once; `0`
    /// takes none, whatever secretd.conf says (the test fixtures set it: a daemon of a test that
    /// runs long writes nothing into its data directory that the test did not ask for).
    package static let backupCheckInterval = "SECRETD_TEST_BACKUP_CHECK_INTERVAL"
}
