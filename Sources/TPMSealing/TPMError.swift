/// What can go wrong sealing a key to a TPM or unsealing it. Messages never contain the
/// secret.
public enum TPMError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No TPM answers at the TCTI named (the default TCTI when it says `"default"`): no
    /// device, nothing listening, or a TCTI that does not load.
    case unavailable(String)
    /// One of the PCRs the key is bound to no longer holds the value it had when the key was
    /// sealed (a different boot chain, or a PCR extended since).
    case policyMismatch
    /// The TPM refuses to load the sealed key: it was sealed by another TPM (or under another
    /// owner seed), or its bytes were altered.
    case otherTPM
    /// The bytes are not a sealed key of this format (wrong magic or version, truncated, extra
    /// bytes, or TPM structures that do not parse).
    case malformed(String)
    /// Any other failure: a TPM or TSS2 response code (decoded with `Tss2_RC_Decode`), or an
    /// input the TPM cannot take (a secret of 0 or over 128 bytes, a PCR outside 0 to 23).
    case failed(String)

    /// A one-line description.
    public var description: String {
        switch self {
        case .unavailable(let tcti): return "no TPM answers at \(tcti)"
        case .policyMismatch: return "the TPM's PCRs no longer match the values the key was sealed to"
        case .otherTPM: return "the sealed key was not made by this TPM, or was altered"
        case .malformed(let what): return "not a TPM-sealed key: \(what)"
        case .failed(let message): return "TPM error: \(message)"
        }
    }
}
