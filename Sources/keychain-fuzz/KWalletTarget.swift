import Foundation
import GnomeKeyringFormat
import SecretCrypto

/// `secretctl import kwallet`: the reader of KWallet's wallet files. An input that starts as a
/// wallet does is read whole with the key of the seed `kdewallet.kwl` (a wallet the real
/// kwalletd5 wrote, scripts/make-kwallets.py, under ``password`` and ``salt``); any other input
/// goes to the parser of the decrypted data directly (a wallet's QDataStream), which a mutated
/// file rarely reaches past its check sum. The generated seeds are such data.
enum KWalletTarget {
    /// The target.
    static let target = FuzzTarget(name: "kwallet", summary: "KWallet wallet files and their decrypted data", maximumLength: 16384, run: run, generatedSeeds: seeds)

    /// The password and salt of the seed wallet.
    static let password = SecureBytes(Array("kde-pw ✓".utf8))
    static let salt: [UInt8] = Array(
        "222a1b7356cb2c58c5f004d36832b23b7d895e135ef4dcaa783f8c0f891ebf76e0cd7a8787b615c2a25928e829b5bef64a1b4c76d3a63378".utf8
    ).chunks(2).map { UInt8(String(decoding: $0, as: UTF8.self), radix: 16)! }
    /// Its key, derived once (PBKDF2 takes tens of milliseconds).
    static let key: SecureBytes? = {
        var wallet = Array("KWALLET\n\r\u{0}\r\n".utf8) + [0, 1, 3, 2]
        defer { wallet.removeAll() }
        return try? KWalletFile.key(of: wallet, salt: salt, password: password)
    }()

    private static func run(_ data: Data) {
        let bytes = [UInt8](data)
        let wallet: KWallet
        if KWalletFile.isWallet(bytes) {
            guard let key, let read = try? KWalletFile.read(bytes, key: key) else { return }
            wallet = read
        } else {
            guard let read = try? bytes.withUnsafeBytes({ try KWalletFile.readData($0) }) else { return }
            wallet = read
        }
        require(wallet.entries.count <= bytes.count / 12, "\(wallet.entries.count) entries from \(bytes.count) bytes")
        for entry in wallet.entries {
            let secret = entry.secret.withBytes { Data($0) }
            switch entry.type {
            case .password:
                require(String(validating: secret, as: UTF8.self) != nil, "a password that is not UTF-8")
            case .map:
                require((try? JSONSerialization.jsonObject(with: secret)) is [String: String], "a map that is not a JSON object of strings")
            case .stream:
                require(secret.count <= bytes.count, "a stream of \(secret.count) bytes from \(bytes.count)")
            }
        }
    }

    /// Decrypted data of one folder with a password, a map and a stream, and of an empty folder.
    private static func seeds() -> [(name: String, data: Data)] {
        func uint32(_ value: Int) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * (3 - $0))) } }
        func string(_ text: String) -> [UInt8] {
            let units = text.utf16.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xff)] }
            return uint32(units.count) + units
        }
        func entry(_ key: String, _ type: Int, _ value: [UInt8]) -> [UInt8] { string(key) + uint32(type) + uint32(value.count) + value }
        let map = uint32(2) + string("user") + string("alice ✓") + string("pass") + string("p\"w\n")
        let data = string("Passwords") + uint32(3) + entry("mail", 1, string("sécret")) + entry("form", 3, map)
            + entry("blob", 2, [0, 0xff, 1]) + string("Empty") + uint32(0)
        return [("data.bin", Data(data))]
    }
}

extension Array {
    /// Consecutive slices of `size` elements (the last may be shorter).
    fileprivate func chunks(_ size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}
