// Sealing a secret to a TPM 2.0 and unsealing it, through libtss2's ESYS API. With
// TPM2+Connection.swift, TPM2+Marshalling.swift and TPM2+Templates.swift, the only files that
// call libtss2.

public import SecretCrypto
internal import CTSS2
import Glibc

/// Seals short secrets (a keyring's master key) to a TPM 2.0, optionally bound to the
/// current values of some PCRs, so that only that TPM, in that state, gives them back.
///
/// Each call connects to the TPM through a TCTI (`Tss2_TctiLdr_Initialize`), creates the
/// owner hierarchy's ECC storage key from a fixed template (the same key each time on one
/// TPM), works under it, and flushes every transient object and session it made before it
/// returns or throws. Nothing stays loaded on the TPM between calls. Calls may run on any
/// thread; each has its own connection.
///
/// The secret crosses the TPM's bus encrypted: TPM2_Create and TPM2_Unseal run with a session
/// salted by the storage key that encrypts it (AES-128-CFB parameter encryption).
public enum TPM2 {
    /// Seals `secret` to the TPM at `tcti`.
    ///
    /// The secret becomes the sensitive data of a KEYEDHASH object created under the storage
    /// key. Without PCRs, its empty authValue unseals it. With PCRs, its authPolicy is
    /// TPM2_PolicyPCR over their current SHA-256 values (computed in a trial session) and
    /// userWithAuth is clear, so it unseals only while they hold those values.
    /// - Parameters:
    ///   - secret: 1 to 128 bytes (the TPM refuses an empty data object).
    ///   - pcrs: SHA-256 PCRs (0 to 23) to bind to, in any order; empty for none.
    ///   - tcti: A TCTI configuration such as `"device:/dev/tpmrm0"` or
    ///     `"swtpm:host=127.0.0.1,port=2321"`; nil for libtss2's default (`TPM2TOOLS_TCTI` is
    ///     not read).
    /// - Returns: The sealed key, whose ``TPMSealedKey/pcrs`` are `pcrs` sorted, without
    ///   repeats.
    /// - Throws: ``TPMError/unavailable(_:)`` when no TPM answers at `tcti`;
    ///   ``TPMError/failed(_:)`` for a secret of 0 or over 128 bytes, a PCR outside 0 to 23,
    ///   or a TPM error (an owner hierarchy with a password, say).
    public static func seal(
        _ secret: SecureBytes, pcrs: [Int] = [], tcti: String? = nil
    ) throws(TPMError) -> TPMSealedKey {
        guard (1...maximumSecretLength).contains(secret.count) else {
            throw .failed("a sealed secret holds 1 to \(maximumSecretLength) bytes, not \(secret.count)")
        }
        let bound = Array(Set(pcrs)).sorted()
        if let outside = bound.first(where: { !pcrRange.contains($0) }) {
            throw .failed("PCR \(outside) is not one of 0 to 23")
        }
        return try withConnection(tcti) { (tpm: Connection) throws(TPMError) -> TPMSealedKey in
            let parent = try createStorageKey(tpm)
            let policy = bound.isEmpty ? nil : try pcrPolicyDigest(tpm, pcrs: bound)
            let encryption = try startEncryptionSession(tpm, saltedBy: parent, attributes: TPMA_SESSION_DECRYPT)
            let (publicArea, privateArea) = try createSealedObject(
                tpm, parent: parent, encryption: encryption, secret: secret, policy: policy)
            try overwriteCreateInput(tpm, parent: parent)
            return TPMSealedKey(pcrs: bound, publicArea: publicArea, privateArea: privateArea)
        }
    }

    /// Unseals `key` with the TPM at `tcti`.
    /// - Parameters:
    ///   - key: A key ``seal(_:pcrs:tcti:)`` made.
    ///   - tcti: As for ``seal(_:pcrs:tcti:)``.
    /// - Returns: The secret, in secure memory.
    /// - Throws: ``TPMError/unavailable(_:)`` when no TPM answers at `tcti`;
    ///   ``TPMError/otherTPM`` when the TPM will not load the key (sealed by another TPM or
    ///   under another owner seed, or altered); ``TPMError/policyMismatch`` when a PCR it is
    ///   bound to has changed; ``TPMError/failed(_:)`` for other TPM errors.
    public static func unseal(_ key: TPMSealedKey, tcti: String? = nil) throws(TPMError) -> SecureBytes {
        var publicArea = try unmarshalPublic(key.publicArea)
        var privateArea = try unmarshalPrivate(key.privateArea)
        return try withConnection(tcti) { (tpm: Connection) throws(TPMError) -> SecureBytes in
            let parent = try createStorageKey(tpm)
            var object = ESYS_TR_NONE
            let loaded = Esys_Load(
                tpm.esys, parent, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &privateArea, &publicArea, &object)
            guard loaded == TSS2_RC_SUCCESS else {
                throw isForeignObject(loaded) ? .otherTPM : error(loaded, "Load", tcti: tpm.name)
            }
            tpm.track(object)
            var authorization = ESYS_TR_PASSWORD
            if !key.pcrs.isEmpty {
                authorization = try startPolicySession(tpm, trial: false)
                let satisfied = applyPCRPolicy(tpm, session: authorization, pcrs: key.pcrs)
                guard satisfied == TSS2_RC_SUCCESS else {
                    throw tpmCode(satisfied) == keychain_tpm2_rc_value
                        ? .policyMismatch : error(satisfied, "PolicyPCR", tcti: tpm.name)
                }
            }
            let encryption = try startEncryptionSession(tpm, saltedBy: parent, attributes: TPMA_SESSION_ENCRYPT)
            return try unsealObject(tpm, object, authorization: authorization, encryption: encryption)
        }
    }

    /// Whether a TPM answers at `tcti` (`TPM2_GetRandom` for one byte), to explain a missing
    /// TPM before trying to seal.
    /// - Parameter tcti: As for ``seal(_:pcrs:tcti:)``.
    public static func isAvailable(tcti: String? = nil) -> Bool {
        do {
            return try withConnection(tcti) { (tpm: Connection) throws(TPMError) -> Bool in
                var random: UnsafeMutablePointer<TPM2B_DIGEST>?
                let rc = Esys_GetRandom(tpm.esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, 1, &random)
                Esys_Free(random)
                return rc == TSS2_RC_SUCCESS
            }
        } catch {
            return false
        }
    }

    // MARK: - Steps

    /// Creates the storage key under the owner hierarchy (`Esys_CreatePrimary`, empty owner
    /// authorization) and tracks it for flushing.
    private static func createStorageKey(_ tpm: Connection) throws(TPMError) -> ESYS_TR {
        var sensitive = TPM2B_SENSITIVE_CREATE()
        var template = storageKeyTemplate()
        var outsideInfo = TPM2B_DATA()
        var creationPCRs = TPML_PCR_SELECTION()
        var handle = ESYS_TR_NONE
        try tpm.check(
            Esys_CreatePrimary(
                tpm.esys, ESYS_TR_RH_OWNER, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &sensitive, &template,
                &outsideInfo, &creationPCRs, &handle, nil, nil, nil, nil),
            "CreatePrimary")
        tpm.track(handle)
        return handle
    }

    /// Starts a policy session (`Esys_StartAuthSession`; a trial one computes a digest and
    /// authorizes nothing), unsalted and without parameter encryption, tracked for flushing.
    private static func startPolicySession(_ tpm: Connection, trial: Bool) throws(TPMError) -> ESYS_TR {
        var cipher = sessionCipher(encrypting: false)
        var session = ESYS_TR_NONE
        try tpm.check(
            Esys_StartAuthSession(
                tpm.esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, nil,
                trial ? TPM2_SE_TRIAL : TPM2_SE_POLICY, &cipher, TPM2_ALG_SHA256, &session),
            "StartAuthSession")
        tpm.track(session)
        return session
    }

    /// Starts an HMAC session salted by `key` that encrypts the first command parameter
    /// (`TPMA_SESSION_DECRYPT`) or the first response parameter (`TPMA_SESSION_ENCRYPT`) with
    /// AES-128-CFB (`Esys_StartAuthSession`, `Esys_TRSess_SetAttributes`), tracked for flushing.
    private static func startEncryptionSession(
        _ tpm: Connection, saltedBy key: ESYS_TR, attributes: TPMA_SESSION
    ) throws(TPMError) -> ESYS_TR {
        var cipher = sessionCipher(encrypting: true)
        var session = ESYS_TR_NONE
        try tpm.check(
            Esys_StartAuthSession(
                tpm.esys, key, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, nil, TPM2_SE_HMAC, &cipher,
                TPM2_ALG_SHA256, &session),
            "StartAuthSession")
        tpm.track(session)
        try tpm.check(
            Esys_TRSess_SetAttributes(tpm.esys, session, attributes | TPMA_SESSION_CONTINUESESSION, 0xff),
            "TRSess_SetAttributes")
        return session
    }

    /// Extends `session`'s policy with TPM2_PolicyPCR over the current SHA-256 values of
    /// `pcrs` (`Esys_PolicyPCR` with an empty digest: the TPM reads the PCRs itself).
    private static func applyPCRPolicy(_ tpm: Connection, session: ESYS_TR, pcrs: [Int]) -> TSS2_RC {
        var current = TPM2B_DIGEST()
        var selection = pcrSelection(pcrs)
        return Esys_PolicyPCR(tpm.esys, session, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &current, &selection)
    }

    /// The policy digest binding `pcrs` to their current values, from a trial session
    /// (`Esys_PolicyPCR`, `Esys_PolicyGetDigest`), which is flushed after.
    private static func pcrPolicyDigest(_ tpm: Connection, pcrs: [Int]) throws(TPMError) -> [UInt8] {
        let trial = try startPolicySession(tpm, trial: true)
        try tpm.check(applyPCRPolicy(tpm, session: trial, pcrs: pcrs), "PolicyPCR")
        var digest: UnsafeMutablePointer<TPM2B_DIGEST>?
        let rc = Esys_PolicyGetDigest(tpm.esys, trial, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &digest)
        defer { Esys_Free(digest) }
        try tpm.check(rc, "PolicyGetDigest")
        guard let digest, digest.pointee.size == TPM2_SHA256_DIGEST_SIZE else {
            throw .failed("PolicyGetDigest returned no SHA-256 digest")
        }
        let bytes = bytes(of: digest.pointee)
        try tpm.flush(trial)
        return bytes
    }

    /// Creates the sealed object holding `secret` under `parent` (`Esys_Create`, the
    /// sensitive area encrypted on the bus by `encryption`) and returns its marshalled public
    /// and private areas. The TPM2B_SENSITIVE_CREATE lives in secure memory and is wiped
    /// after the call.
    private static func createSealedObject(
        _ tpm: Connection, parent: ESYS_TR, encryption: ESYS_TR, secret: SecureBytes, policy: [UInt8]?
    ) throws(TPMError) -> ([UInt8], [UInt8]) {
        let storage = SecureBytes(count: MemoryLayout<TPM2B_SENSITIVE_CREATE>.size)  // zeroed: empty userAuth
        defer { storage.withMutableBytes { explicit_bzero($0.baseAddress!, $0.count) } }
        let sensitive = storage.pointer.bindMemory(to: TPM2B_SENSITIVE_CREATE.self, capacity: 1)
        sensitive.pointee.sensitive.data.size = UInt16(secret.count)
        let buffer = MemoryLayout<TPM2B_SENSITIVE_CREATE>.offset(of: \.sensitive.data.buffer)!
        secret.withBytes { storage.pointer.advanced(by: buffer).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }

        var template = sealedObjectTemplate(policy: policy)
        var outsideInfo = TPM2B_DATA()
        var creationPCRs = TPML_PCR_SELECTION()
        var outPrivate: UnsafeMutablePointer<TPM2B_PRIVATE>?
        var outPublic: UnsafeMutablePointer<TPM2B_PUBLIC>?
        let rc = Esys_Create(
            tpm.esys, parent, ESYS_TR_PASSWORD, encryption, ESYS_TR_NONE, sensitive, &template, &outsideInfo,
            &creationPCRs, &outPrivate, &outPublic, nil, nil, nil)
        defer {
            Esys_Free(outPrivate)
            Esys_Free(outPublic)
        }
        try tpm.check(rc, "Create")
        guard let outPrivate, let outPublic else { throw .failed("Create returned no object") }
        return (try marshal(UnsafePointer(outPublic)), try marshal(UnsafePointer(outPrivate)))
    }

    /// Overwrites the copy of the last TPM2_Create's sensitive area that ESYS keeps in its
    /// context (`Create_IN.inSensitiveData` in libtss2's esys_int.h), which `Esys_Finalize`
    /// would free without wiping: a second `Esys_Create`, of a data object holding one zero
    /// byte (the TPM refuses an empty one), whose result is dropped. ESYS copies the whole
    /// structure, so all of the first one's buffer is overwritten.
    private static func overwriteCreateInput(_ tpm: Connection, parent: ESYS_TR) throws(TPMError) {
        var empty = TPM2B_SENSITIVE_CREATE()
        empty.sensitive.data.size = 1
        var template = sealedObjectTemplate(policy: nil)
        var outsideInfo = TPM2B_DATA()
        var creationPCRs = TPML_PCR_SELECTION()
        try tpm.check(
            Esys_Create(
                tpm.esys, parent, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &empty, &template, &outsideInfo,
                &creationPCRs, nil, nil, nil, nil, nil),
            "Create")
    }

    /// Unseals the loaded `object` (`Esys_Unseal`) authorized by `authorization` (a
    /// satisfied policy session, or the empty password), its result encrypted on the bus by
    /// `encryption`; copies the secret into secure memory and wipes ESYS's copies.
    private static func unsealObject(
        _ tpm: Connection, _ object: ESYS_TR, authorization: ESYS_TR, encryption: ESYS_TR
    ) throws(TPMError) -> SecureBytes {
        var data: UnsafeMutablePointer<TPM2B_SENSITIVE_DATA>?
        let rc = Esys_Unseal(tpm.esys, object, authorization, encryption, ESYS_TR_NONE, &data)
        defer {
            if let data { explicit_bzero(data, MemoryLayout<TPM2B_SENSITIVE_DATA>.size) }
            Esys_Free(data)
        }
        guard rc == TSS2_RC_SUCCESS else {
            throw tpmCode(rc) == keychain_tpm2_rc_policy_fail ? .policyMismatch : error(rc, "Unseal", tcti: tpm.name)
        }
        defer { tpm.wipeLastResponse() }
        guard let data, Int(data.pointee.size) <= maximumSecretLength else { throw .failed("Unseal returned no data") }
        let buffer = MemoryLayout<TPM2B_SENSITIVE_DATA>.offset(of: \.buffer)!
        return SecureBytes(
            copying: UnsafeRawBufferPointer(start: UnsafeRawPointer(data) + buffer, count: Int(data.pointee.size)))
    }

    /// Whether `Esys_Load` failed with `rc` because the object was not made under this storage
    /// key: its private area's HMAC or its binding to the public area does not check
    /// (`TPM2_RC_INTEGRITY`, `TPM2_RC_BINDING`), or it does not decrypt into a sensitive area
    /// (`TPM2_RC_SENSITIVE`, `TPM2_RC_SIZE`, `TPM2_RC_KEY`).
    private static func isForeignObject(_ rc: TSS2_RC) -> Bool {
        guard let code = tpmCode(rc) else { return false }
        return [
            keychain_tpm2_rc_integrity, keychain_tpm2_rc_binding, keychain_tpm2_rc_sensitive, keychain_tpm2_rc_size,
            keychain_tpm2_rc_key,
        ].contains(code)
    }
}
