// The fixed TPM structures: the storage key's template, the sealed object's template, the
// PCR selection and the session parameters.

internal import CTSS2

extension TPM2 {
    /// PCRs that can be bound: the 24 of a PC Client TPM's SHA-256 bank.
    static let pcrRange = 0..<24

    /// The largest secret a sealed object holds (the TPM's `MAX_SYM_DATA`).
    static let maximumSecretLength = 128

    /// The primary storage key's template, the TCG's ECC SRK (TPM 2.0 Provisioning Guidance):
    /// NIST P-256, restricted decryption, AES-128-CFB for its children, empty unique field.
    /// Created from the owner hierarchy's seed, it is the same key each time on one TPM and a
    /// different one on any other.
    static func storageKeyTemplate() -> TPM2B_PUBLIC {
        var template = TPM2B_PUBLIC()
        template.publicArea.type = TPM2_ALG_ECC
        template.publicArea.nameAlg = TPM2_ALG_SHA256
        template.publicArea.objectAttributes =
            TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT | TPMA_OBJECT_SENSITIVEDATAORIGIN
            | TPMA_OBJECT_USERWITHAUTH | TPMA_OBJECT_RESTRICTED | TPMA_OBJECT_DECRYPT | TPMA_OBJECT_NODA
        template.publicArea.parameters.eccDetail.symmetric = aes128CFB()
        template.publicArea.parameters.eccDetail.scheme.scheme = TPM2_ALG_NULL
        template.publicArea.parameters.eccDetail.curveID = TPM2_ECC_NIST_P256
        template.publicArea.parameters.eccDetail.kdf.scheme = TPM2_ALG_NULL
        return template
    }

    /// The sealed object's template: a KEYEDHASH data object (no signing or decryption) that
    /// stays on this TPM under this parent. With a `policy` digest, only a policy session that
    /// satisfies it may unseal (userWithAuth clear); without one, its empty authValue does.
    static func sealedObjectTemplate(policy: [UInt8]?) -> TPM2B_PUBLIC {
        var template = TPM2B_PUBLIC()
        template.publicArea.type = TPM2_ALG_KEYEDHASH
        template.publicArea.nameAlg = TPM2_ALG_SHA256
        template.publicArea.objectAttributes = TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT | TPMA_OBJECT_NODA
        if let policy {
            template.publicArea.authPolicy = digest(policy)
        } else {
            template.publicArea.objectAttributes |= TPMA_OBJECT_USERWITHAUTH
        }
        template.publicArea.parameters.keyedHashDetail.scheme.scheme = TPM2_ALG_NULL
        return template
    }

    /// The selection of `pcrs` in the SHA-256 bank (indices in ``pcrRange``).
    static func pcrSelection(_ pcrs: [Int]) -> TPML_PCR_SELECTION {
        var selection = TPML_PCR_SELECTION()
        selection.count = 1
        selection.pcrSelections.0.hash = TPM2_ALG_SHA256
        selection.pcrSelections.0.sizeofSelect = UInt8(pcrRange.count / 8)
        withUnsafeMutableBytes(of: &selection.pcrSelections.0.pcrSelect) { bits in
            for pcr in pcrs { bits[pcr / 8] |= 1 << (pcr % 8) }
        }
        return selection
    }

    /// AES-128 in CFB mode, for the storage key's children.
    static func aes128CFB() -> TPMT_SYM_DEF_OBJECT {
        var symmetric = TPMT_SYM_DEF_OBJECT()
        symmetric.algorithm = TPM2_ALG_AES
        symmetric.keyBits.aes = 128
        symmetric.mode.aes = TPM2_ALG_CFB
        return symmetric
    }

    /// A session's parameter-encryption cipher: AES-128-CFB when `encrypting`, none otherwise.
    static func sessionCipher(encrypting: Bool) -> TPMT_SYM_DEF {
        var symmetric = TPMT_SYM_DEF()
        symmetric.algorithm = encrypting ? TPM2_ALG_AES : TPM2_ALG_NULL
        if encrypting {
            symmetric.keyBits.aes = 128
            symmetric.mode.aes = TPM2_ALG_CFB
        }
        return symmetric
    }

    /// A TPM2B_DIGEST holding `bytes` (at most 64).
    static func digest(_ bytes: [UInt8]) -> TPM2B_DIGEST {
        var digest = TPM2B_DIGEST()
        digest.size = UInt16(bytes.count)
        withUnsafeMutableBytes(of: &digest.buffer) { $0.copyBytes(from: bytes) }
        return digest
    }

    /// The bytes of a TPM2B_DIGEST.
    static func bytes(of digest: TPM2B_DIGEST) -> [UInt8] {
        withUnsafeBytes(of: digest.buffer) { Array($0.prefix(Int(digest.size))) }
    }
}
