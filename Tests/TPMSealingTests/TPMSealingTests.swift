import Foundation
import KeychainTestSupport
import SecretCrypto
import Testing

@testable import TPMSealing

/// Sealing against a real software TPM (swtpm), one per test. swtpm keeps only 3 transient
/// objects and 3 sessions, so a handle left loaded on any path soon shows as
/// TPM2_RC_OBJECT_MEMORY (0x902) or TPM2_RC_SESSION_MEMORY (0x903).
@Suite struct Sealing {
    /// A 32-byte key with a recognisable pattern.
    static let masterKey = SecureBytes((0..<32).map { UInt8($0 * 7 + 3) })

    func bytes(_ secret: SecureBytes) -> [UInt8] { secret.withBytes { Array($0) } }

    /// Whether `body` throws ``TPMError/malformed(_:)``.
    func isMalformed(_ body: () throws -> Void) -> Bool {
        do {
            try body()
            return false
        } catch TPMError.malformed {
            return true
        } catch {
            return false
        }
    }

    // MARK: - Sealing and unsealing

    @Test("a key sealed without PCRs unseals to the same bytes")
    func roundTrip() throws {
        try SoftwareTPM.with { tpm in
            #expect(TPM2.isAvailable(tcti: tpm.tcti))
            let sealed = try TPM2.seal(Self.masterKey, pcrs: [], tcti: tpm.tcti)
            #expect(sealed.pcrs == [])
            let unsealed = try TPM2.unseal(sealed, tcti: tpm.tcti)
            #expect(unsealed.constantTimeEquals(Self.masterKey))
            #expect(try tpm.loadedHandles() == [])
        }
    }

    @Test("secrets of 1 and 128 bytes round-trip; 0 or 129 bytes and PCR 24 are refused before the TPM is asked")
    func secretLengths() throws {
        try SoftwareTPM.with { tpm in
            for length in [1, 128] {
                let secret = SecureBytes([UInt8](repeating: 0xa5, count: length))
                let unsealed = try TPM2.unseal(TPM2.seal(secret, pcrs: [], tcti: tpm.tcti), tcti: tpm.tcti)
                #expect(bytes(unsealed) == bytes(secret), "\(length) bytes")
            }
        }
        let long = SecureBytes([UInt8](repeating: 1, count: 129))
        #expect(throws: TPMError.failed("a sealed secret holds 1 to 128 bytes, not 129")) {
            try TPM2.seal(long, pcrs: [], tcti: "swtpm:host=127.0.0.1,port=1")
        }
        #expect(throws: TPMError.failed("a sealed secret holds 1 to 128 bytes, not 0")) {
            try TPM2.seal(SecureBytes([]), pcrs: [], tcti: "swtpm:host=127.0.0.1,port=1")
        }
        #expect(throws: TPMError.failed("PCR 24 is not one of 0 to 23")) {
            try TPM2.seal(Self.masterKey, pcrs: [7, 24], tcti: "swtpm:host=127.0.0.1,port=1")
        }
    }

    @Test("a key bound to PCRs 7 and 16 unseals while they hold their values, and not after PCR 16 is extended")
    func pcrBinding() throws {
        try SoftwareTPM.with { tpm in
            try tpm.extendPCR(16)  // bound to its current value, whatever that is
            let sealed = try TPM2.seal(Self.masterKey, pcrs: [16, 7, 16], tcti: tpm.tcti)
            #expect(sealed.pcrs == [7, 16])
            #expect(bytes(try TPM2.unseal(sealed, tcti: tpm.tcti)) == bytes(Self.masterKey))
            #expect(bytes(try TPM2.unseal(sealed, tcti: tpm.tcti)) == bytes(Self.masterKey))

            try tpm.extendPCR(16)
            #expect(throws: TPMError.policyMismatch) { try TPM2.unseal(sealed, tcti: tpm.tcti) }
            #expect(try tpm.loadedHandles() == [], "the failed unseal flushed its objects and sessions")

            // Sealed again now, it unseals again; the unbound key is not affected either way.
            let resealed = try TPM2.seal(Self.masterKey, pcrs: [7, 16], tcti: tpm.tcti)
            #expect(bytes(try TPM2.unseal(resealed, tcti: tpm.tcti)) == bytes(Self.masterKey))
            #expect(resealed != sealed)
        }
    }

    @Test("a key sealed by one TPM does not unseal on another, nor once its bytes are altered")
    func otherTPM() throws {
        try SoftwareTPM.with { first in
            try SoftwareTPM.with { second in
                for pcrs in [[], [7]] {
                    let sealed = try TPM2.seal(Self.masterKey, pcrs: pcrs, tcti: first.tcti)
                    #expect(throws: TPMError.otherTPM) { try TPM2.unseal(sealed, tcti: second.tcti) }
                    #expect(bytes(try TPM2.unseal(sealed, tcti: first.tcti)) == bytes(Self.masterKey))

                    // The last byte is in the private area's encrypted sensitive data.
                    var altered = sealed.serialized
                    altered[altered.count - 1] ^= 0x01
                    let tampered = try TPMSealedKey(serialized: altered)
                    #expect(throws: TPMError.otherTPM) { try TPM2.unseal(tampered, tcti: first.tcti) }
                }
                #expect(try first.loadedHandles() == [])
                #expect(try second.loadedHandles() == [])
            }
        }
    }

    @Test("no TPM listening is .unavailable within seconds, naming the TCTI")
    func unavailable() throws {
        let port = try SoftwareTPM.freePortPair()
        let tcti = "swtpm:host=127.0.0.1,port=\(port)"
        let start = Date()
        #expect(throws: TPMError.unavailable(tcti)) { try TPM2.seal(Self.masterKey, pcrs: [], tcti: tcti) }
        let sealed = try SoftwareTPM.with { try TPM2.seal(Self.masterKey, pcrs: [], tcti: $0.tcti) }
        let unsealStart = Date()
        #expect(throws: TPMError.unavailable(tcti)) { try TPM2.unseal(sealed, tcti: tcti) }
        #expect(!TPM2.isAvailable(tcti: tcti))
        #expect(Date().timeIntervalSince(unsealStart) < 5)
        #expect(throws: TPMError.unavailable("nosuchtcti")) { try TPM2.seal(Self.masterKey, pcrs: [], tcti: "nosuchtcti") }
        #expect(Date().timeIntervalSince(start) < 15)
    }

    @Test("50 seals and unseals in a row, and failing unseals between them, leave nothing loaded")
    func noLeaks() throws {
        try SoftwareTPM.with { tpm in
            try tpm.extendPCR(23)
            let stale = try TPM2.seal(Self.masterKey, pcrs: [23], tcti: tpm.tcti)
            try tpm.extendPCR(23)
            let foreign = try SoftwareTPM.with { try TPM2.seal(Self.masterKey, pcrs: [], tcti: $0.tcti) }
            for round in 0..<50 {
                let secret = SecureBytes((0..<32).map { UInt8(truncatingIfNeeded: $0 &+ round) })
                let pcrs = round.isMultiple(of: 2) ? [] : [0, 7]
                let sealed = try TPM2.seal(secret, pcrs: pcrs, tcti: tpm.tcti)
                #expect(bytes(try TPM2.unseal(sealed, tcti: tpm.tcti)) == bytes(secret), "round \(round)")
                if round.isMultiple(of: 5) {
                    #expect(throws: TPMError.policyMismatch) { try TPM2.unseal(stale, tcti: tpm.tcti) }
                    #expect(throws: TPMError.otherTPM) { try TPM2.unseal(foreign, tcti: tpm.tcti) }
                }
            }
            #expect(try tpm.loadedHandles() == [])
        }
    }

    // MARK: - The serialized form

    @Test("the serialized form reads back equal, and anything cut, padded or foreign is .malformed")
    func serialized() throws {
        let (plain, bound) = try SoftwareTPM.with { tpm in
            (
                try TPM2.seal(Self.masterKey, pcrs: [], tcti: tpm.tcti),
                try TPM2.seal(Self.masterKey, pcrs: [7, 16], tcti: tpm.tcti)
            )
        }
        for key in [plain, bound] {
            let bytes = key.serialized
            #expect(Array(bytes.prefix(6)) == Array("KTPM".utf8) + [1, UInt8(key.pcrs.count)])
            #expect(try TPMSealedKey(serialized: bytes) == key)
            for length in 0..<bytes.count {
                #expect(isMalformed { _ = try TPMSealedKey(serialized: Array(bytes.prefix(length))) }, "cut to \(length)")
            }
            #expect(isMalformed { _ = try TPMSealedKey(serialized: bytes + [0]) })
            var magic = bytes
            magic[0] = UInt8(ascii: "X")
            #expect(throws: TPMError.malformed("no TPM-sealed key header")) { try TPMSealedKey(serialized: magic) }
            var version = bytes
            version[4] = 2
            #expect(throws: TPMError.malformed("unsupported version 2")) { try TPMSealedKey(serialized: version) }
        }
        #expect(plain != bound)

        // PCRs out of order, out of range, or not matching the object's policy.
        let pcrStart = 6
        var descending = bound.serialized
        (descending[pcrStart], descending[pcrStart + 1]) = (16, 7)
        #expect(isMalformed { _ = try TPMSealedKey(serialized: descending) })
        var outOfRange = bound.serialized
        outOfRange[pcrStart + 1] = 24
        #expect(isMalformed { _ = try TPMSealedKey(serialized: outOfRange) })
        let unbound = Array(bound.serialized.prefix(5)) + [0] + Array(bound.serialized.dropFirst(pcrStart + 2))
        #expect(throws: TPMError.malformed("the PCR list does not match the object's policy")) {
            try TPMSealedKey(serialized: unbound)
        }
        let claimed = Array(plain.serialized.prefix(5)) + [1, 7] + Array(plain.serialized.dropFirst(pcrStart))
        #expect(throws: TPMError.malformed("the PCR list does not match the object's policy")) {
            try TPMSealedKey(serialized: claimed)
        }
        // The areas swapped, a public area of garbage the right size, and random bytes.
        let header = Array(plain.serialized.prefix(pcrStart))
        #expect(isMalformed { _ = try TPMSealedKey(serialized: header + plain.privateArea + plain.publicArea) })
        let inner = plain.publicArea.count - 2
        let garbage = [UInt8(0), UInt8(inner)] + [UInt8](repeating: 0xee, count: inner)
        #expect(isMalformed { _ = try TPMSealedKey(serialized: header + garbage + plain.privateArea) })
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            let length = Int.random(in: 0..<300, using: &generator)
            let noise = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            #expect(isMalformed { _ = try TPMSealedKey(serialized: noise) })
            #expect(isMalformed { _ = try TPMSealedKey(serialized: header + noise) })
        }
    }

    // MARK: - Response codes

    @Test("response codes: the TPM's own without their parameter number, TCTI failures as .unavailable")
    func responseCodes() {
        #expect(TPM2.tpmCode(0x1df) == 0x9f)  // TPM2_RC_INTEGRITY on parameter 1
        #expect(TPM2.tpmCode(0x99d) == 0x9d)  // TPM2_RC_POLICY_FAIL on session 1
        #expect(TPM2.tpmCode(0x902) == 0x902)  // TPM2_RC_OBJECT_MEMORY, format 0
        #expect(TPM2.tpmCode(0x70001) == nil)  // an ESYS error
        #expect(TPM2.error(0xa000a, "Load", tcti: "device:/dev/tpmrm0") == .unavailable("device:/dev/tpmrm0"))
        #expect(
            TPM2.error(0x902, "Load", tcti: "t") == .failed("Load: tpm:warn(2.0): out of memory for object contexts (0x902)"))
    }
}
