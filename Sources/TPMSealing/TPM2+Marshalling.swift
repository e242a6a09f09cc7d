// The sealed object's TPM2B_PUBLIC and TPM2B_PRIVATE to and from their TPM wire form
// (libtss2-mu), and the checks TPMSealedKey(serialized:) makes on them.

internal import CTSS2

extension TPM2 {
    /// The wire form of a sealed object's public area (`Tss2_MU_TPM2B_PUBLIC_Marshal`).
    static func marshal(_ value: UnsafePointer<TPM2B_PUBLIC>) throws(TPMError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: MemoryLayout<TPM2B_PUBLIC>.size)
        var offset = 0
        let rc = bytes.withUnsafeMutableBufferPointer {
            Tss2_MU_TPM2B_PUBLIC_Marshal(value, $0.baseAddress, $0.count, &offset)
        }
        guard rc == TSS2_RC_SUCCESS else { throw .failed("marshalling the public area: \(describe(rc))") }
        return Array(bytes.prefix(offset))
    }

    /// The wire form of a sealed object's private area (`Tss2_MU_TPM2B_PRIVATE_Marshal`);
    /// the TPM encrypted it under the storage key.
    static func marshal(_ value: UnsafePointer<TPM2B_PRIVATE>) throws(TPMError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: MemoryLayout<TPM2B_PRIVATE>.size)
        var offset = 0
        let rc = bytes.withUnsafeMutableBufferPointer {
            Tss2_MU_TPM2B_PRIVATE_Marshal(value, $0.baseAddress, $0.count, &offset)
        }
        guard rc == TSS2_RC_SUCCESS else { throw .failed("marshalling the private area: \(describe(rc))") }
        return Array(bytes.prefix(offset))
    }

    /// Parses exactly `bytes` as a TPM2B_PUBLIC. The inner TPMT_PUBLIC is unmarshalled on its
    /// own and must fill the size its prefix gives: libtss2 3.2's
    /// `Tss2_MU_TPM2B_PUBLIC_Unmarshal` checks neither.
    static func unmarshalPublic(_ bytes: [UInt8]) throws(TPMError) -> TPM2B_PUBLIC {
        guard bytes.count > 2, Int(bytes[0]) << 8 | Int(bytes[1]) == bytes.count - 2 else {
            throw .malformed("the public area's size is wrong")
        }
        var value = TPM2B_PUBLIC()
        var offset = 0
        let rc = bytes.withUnsafeBufferPointer {
            Tss2_MU_TPMT_PUBLIC_Unmarshal($0.baseAddress! + 2, $0.count - 2, &offset, &value.publicArea)
        }
        guard rc == TSS2_RC_SUCCESS, offset == bytes.count - 2 else { throw .malformed("the public area does not parse") }
        value.size = UInt16(offset)
        return value
    }

    /// Parses exactly `bytes` as a TPM2B_PRIVATE (`Tss2_MU_TPM2B_PRIVATE_Unmarshal`).
    static func unmarshalPrivate(_ bytes: [UInt8]) throws(TPMError) -> TPM2B_PRIVATE {
        var value = TPM2B_PRIVATE()
        var offset = 0
        let rc = bytes.withUnsafeBufferPointer {
            Tss2_MU_TPM2B_PRIVATE_Unmarshal($0.baseAddress, $0.count, &offset, &value)
        }
        guard rc == TSS2_RC_SUCCESS, offset == bytes.count, value.size > 0 else {
            throw .malformed("the private area does not parse")
        }
        return value
    }

    /// Checks that `publicArea` and `privateArea` parse and describe an object ``seal(_:pcrs:tcti:)``
    /// makes: a SHA-256 KEYEDHASH object whose authorization matches `pcrs` (a 32-byte
    /// policy and userWithAuth clear when bound to PCRs, userWithAuth set otherwise).
    static func checkSealedObject(publicArea: [UInt8], privateArea: [UInt8], pcrs: [Int]) throws(TPMError) {
        let object = try unmarshalPublic(publicArea).publicArea
        _ = try unmarshalPrivate(privateArea)
        guard object.type == TPM2_ALG_KEYEDHASH, object.nameAlg == TPM2_ALG_SHA256 else {
            throw .malformed("the public area is not a sealed object's")
        }
        let userWithAuth = object.objectAttributes & TPMA_OBJECT_USERWITHAUTH != 0
        let policyLength = Int(object.authPolicy.size)
        guard pcrs.isEmpty ? userWithAuth && policyLength == 0 : !userWithAuth && policyLength == 32 else {
            throw .malformed("the PCR list does not match the object's policy")
        }
    }
}
