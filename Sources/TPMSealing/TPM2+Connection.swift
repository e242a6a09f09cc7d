// One connection to a TPM (TCTI loader and ESYS contexts), the transient objects and sessions
// made over it, and the mapping of TSS2 response codes to TPMError. With TPM2.swift,
// TPM2+Marshalling.swift and TPM2+Templates.swift, the only files that call libtss2.

internal import CTSS2
import Glibc

extension TPM2 {
    /// A TCTI context and an ESYS context over it, and every transient object and session
    /// created through them: ``close()`` flushes those from the TPM and finalizes both
    /// contexts. A TPM reached without a resource manager (swtpm over TCP, `/dev/tpm0`) keeps
    /// transient objects after the connection ends, so one left behind on an error path would
    /// soon fill its object memory (`TPM2_RC_OBJECT_MEMORY`, 0x902).
    final class Connection {
        /// The ESYS context (`ESYS_CONTEXT *`); valid until ``close()``.
        let esys: OpaquePointer
        /// The TCTI context (`TSS2_TCTI_CONTEXT *`), which ESYS borrows.
        private var tcti: OpaquePointer?
        /// Transient objects and sessions still loaded, oldest first.
        private var loaded: [ESYS_TR] = []
        /// What ``TPMError/unavailable(_:)`` names: the TCTI string or "the default TCTI".
        let name: String

        /// Connects through `tcti` (`Tss2_TctiLdr_Initialize`; nil for its default search:
        /// tabrmd, `/dev/tpmrm0`, `/dev/tpm0`, swtpm and mssim on localhost) and starts ESYS
        /// over it (`Esys_Initialize`).
        /// - Throws: ``TPMError/unavailable(_:)`` when the TCTI cannot be loaded or connected.
        init(tcti: String?) throws(TPMError) {
            name = tcti ?? "the default TCTI"
            var context: OpaquePointer?
            let status = tcti.map { Tss2_TctiLdr_Initialize($0, &context) } ?? Tss2_TctiLdr_Initialize(nil, &context)
            guard status == TSS2_RC_SUCCESS, context != nil else { throw .unavailable(name) }
            var esys: OpaquePointer?
            guard Esys_Initialize(&esys, context, nil) == TSS2_RC_SUCCESS, let esys else {
                Tss2_TctiLdr_Finalize(&context)
                throw .unavailable(name)
            }
            self.esys = esys
            self.tcti = context
        }

        deinit { close() }

        /// Flushes every transient object and session still loaded (newest first; a failure
        /// is ignored, since there is nothing left to do about it), then finalizes ESYS and the
        /// TCTI (`Esys_FlushContext`, `Esys_Finalize`, `Tss2_TctiLdr_Finalize`). Idempotent.
        func close() {
            guard tcti != nil else { return }
            for handle in loaded.reversed() { _ = Esys_FlushContext(esys, handle) }
            loaded = []
            var context: OpaquePointer? = esys
            Esys_Finalize(&context)
            Tss2_TctiLdr_Finalize(&tcti)
        }

        /// Records `handle` (a transient object or a session) for flushing at ``close()``.
        func track(_ handle: ESYS_TR) {
            loaded.append(handle)
        }

        /// Flushes `handle` now rather than at ``close()`` (`Esys_FlushContext`).
        func flush(_ handle: ESYS_TR) throws(TPMError) {
            guard let index = loaded.lastIndex(of: handle) else { return }
            loaded.remove(at: index)
            try check(Esys_FlushContext(esys, handle), "FlushContext")
        }

        /// Throws the ``TPMError`` for `rc` unless it is `TSS2_RC_SUCCESS`.
        func check(_ rc: TSS2_RC, _ command: String) throws(TPMError) {
            guard rc != TSS2_RC_SUCCESS else { return }
            throw TPM2.error(rc, command, tcti: name)
        }

        /// Wipes the response parameters of the last command in the SYS context's buffer
        /// (`Esys_GetSysContext`, `Tss2_Sys_GetRpBuffer`), where ESYS leaves them after
        /// decrypting: after `TPM2_Unseal`, the secret in plaintext.
        func wipeLastResponse() {
            var sys: OpaquePointer?
            guard Esys_GetSysContext(esys, &sys) == TSS2_RC_SUCCESS, let sys else { return }
            var size = 0
            var buffer: UnsafePointer<UInt8>?
            guard Tss2_Sys_GetRpBuffer(sys, &size, &buffer) == TSS2_RC_SUCCESS, let buffer, size > 0 else { return }
            explicit_bzero(UnsafeMutableRawPointer(mutating: buffer), size)
        }
    }

    /// Runs `body` over a new ``Connection`` through `tcti`, closed on every path.
    static func withConnection<T>(
        _ tcti: String?, _ body: (Connection) throws(TPMError) -> T
    ) throws(TPMError) -> T {
        let connection = try Connection(tcti: tcti)
        defer { connection.close() }
        return try body(connection)
    }

    // MARK: - Response codes

    /// The TPM's own response code in `rc` without its handle, session or parameter number
    /// (for format-1 codes); nil when a software layer (ESYS, SYS, TCTI, MU) reported `rc`.
    static func tpmCode(_ rc: TSS2_RC) -> TSS2_RC? {
        let layer = rc & keychain_tss2_rc_layer_mask
        guard layer == 0 || layer == keychain_tss2_resmgr_tpm_layer else { return nil }
        let code = rc & 0xffff
        return code & keychain_tpm2_rc_fmt1 != 0 ? code & (keychain_tpm2_rc_fmt1 | 0x3f) : code
    }

    /// The error for `rc` from `command`: ``TPMError/unavailable(_:)`` when the TCTI layer
    /// failed (the TPM went away or never answered), ``TPMError/failed(_:)`` with the
    /// command, `Tss2_RC_Decode`'s text and the code otherwise.
    static func error(_ rc: TSS2_RC, _ command: String, tcti: String) -> TPMError {
        if rc & keychain_tss2_rc_layer_mask == keychain_tss2_tcti_layer { return .unavailable(tcti) }
        return .failed("\(command): \(describe(rc))")
    }

    /// `Tss2_RC_Decode`'s text for `rc` and the code in hex, e.g.
    /// `tpm:parameter(1):integrity check failed (0x1df)`.
    static func describe(_ rc: TSS2_RC) -> String {
        let text = Tss2_RC_Decode(rc).map { String(cString: $0) } ?? "unknown"
        return "\(text) (0x\(String(rc, radix: 16)))"
    }
}
