import Foundation
import SecretService
import TPMSealing

/// The login keyring's TPM slot file (`login-keyring.tpm`), which secretd reads at start, and
/// the TPM-sealed key inside it: each input goes to both ``TPMSlot/init(serialized:)`` and
/// `TPMSealedKey(serialized:)`. Both formats are canonical, so what parses writes back the
/// same bytes and parses again to an equal value; what does not parse is `.malformed`, with a
/// short message. Nothing here reaches a TPM: parsing only unmarshals the TPM structures
/// (libtss2-mu). The seeds are slots that `secretctl tpm enroll` sealed with swtpm, their
/// sealed keys alone, and a few damaged files.
enum TPMSlotTarget {
    /// The target.
    static let target = FuzzTarget(
        name: "tpm-slot", summary: "the login keyring's TPM slot file and the TPM-sealed key in it", maximumLength: 4096,
        run: run)

    /// The longest message a refusal may carry: a sentence, never a dump of the input.
    private static let longestMessage = 160

    private static func run(_ data: Data) {
        let bytes = [UInt8](data)
        checkSlot(bytes)
        checkSealedKey(bytes)
    }

    /// A slot that parses writes back `bytes` and parses again to an equal slot.
    private static func checkSlot(_ bytes: [UInt8]) {
        let slot: TPMSlot
        do {
            slot = try TPMSlot(serialized: bytes)
        } catch {
            guard case .malformed(let what) = error else { fatalError("a slot was refused as \(error), not malformed") }
            checkMessage(what)
            return
        }
        require(slot.serialized == bytes, "a slot of \(bytes.count) bytes writes back \(slot.serialized.count) other bytes")
        checkPCRs(slot.pcrs)
        require(slot.pcrs == slot.sealedSlotKey.pcrs, "the slot's PCRs are not its sealed key's")
        do {
            require(try TPMSlot(serialized: slot.serialized) == slot, "a slot changed when parsed again")
            require(try TPMSealedKey(serialized: slot.sealedSlotKey.serialized) == slot.sealedSlotKey,
                    "a slot's sealed key changed when parsed again")
        } catch {
            fatalError("a slot that parsed does not parse again: \(error)")
        }
    }

    /// A sealed key that parses writes back `bytes` and parses again to an equal key.
    private static func checkSealedKey(_ bytes: [UInt8]) {
        let key: TPMSealedKey
        do {
            key = try TPMSealedKey(serialized: bytes)
        } catch {
            guard case .malformed(let what) = error else { fatalError("a sealed key was refused as \(error), not malformed") }
            checkMessage(what)
            return
        }
        require(key.serialized == bytes, "a sealed key of \(bytes.count) bytes writes back \(key.serialized.count) other bytes")
        checkPCRs(key.pcrs)
        do {
            require(try TPMSealedKey(serialized: key.serialized) == key, "a sealed key changed when parsed again")
        } catch {
            fatalError("a sealed key that parsed does not parse again: \(error)")
        }
    }

    /// PCRs of the SHA-256 bank, each once, ascending.
    private static func checkPCRs(_ pcrs: [Int]) {
        require(pcrs.allSatisfy((0...23).contains) && zip(pcrs, pcrs.dropFirst()).allSatisfy { $0 < $1 },
                "PCRs \(pcrs) are not strictly ascending within 0 to 23")
    }

    /// A refusal's message is a short line of printable ASCII: it describes the input, it
    /// does not quote it. (Whether it contains runs of the input is not checked: the fuzzer
    /// would learn the messages' own words from that comparison.)
    private static func checkMessage(_ message: String) {
        let utf8 = Array(message.utf8)
        require(!utf8.isEmpty && utf8.count <= longestMessage, "a refusal's message has \(utf8.count) bytes")
        require(utf8.allSatisfy { (0x20...0x7e).contains($0) }, "a refusal's message is not printable ASCII")
    }
}
