import Foundation
import SecretCtl
import SecretCrypto
import SecretStore

/// `secretctl import` of our sealed export format: the header with its key derivation
/// parameters, opened with the passphrase `fuzz` (the committed seeds use it, so the fuzzer
/// reaches the JSON inside), and the JSON payload itself, which must seal and open again.
enum ExportFileTarget {
    /// The passphrase of the seeds.
    static let passphrase = Data("fuzz".utf8)

    /// The target.
    static let target = FuzzTarget(
        name: "export-file", summary: "sealed export files (header, KDF parameters, JSON payload)", maximumLength: 8192,
        run: run, generatedSeeds: seeds)

    /// Exports of a few items under the cheapest parameters, and their JSON payloads.
    private static func seeds() -> [(name: String, data: Data)] {
        let sets: [(String, [ExportFile.Item])] = [
            ("empty", []),
            ("one", [ExportFile.Item(label: "Mail", attributes: ["service": "mail", "account": "alice"], secret: Data("s3cr3t".utf8))]),
            ("mixed", [
                ExportFile.Item(label: "Mail ✓", attributes: ["service": "mail", "account": "alice"], secret: Data("pw".utf8)),
                ExportFile.Item(label: "", attributes: [:], secret: Data([0, 1, 255])),
                ExportFile.Item(
                    label: "Git: https://git.example.com/",
                    attributes: ["xdg:schema": "org.gnome.keyring.NetworkPassword", "server": "git.example.com",
                                 "protocol": "https", "user": "bob", "keychain:access-group": "com.example.deploy"],
                    secret: Data("ghp_token\npassword_expiry_utc=1700000000".utf8)),
            ]),
        ]
        var seeds: [(name: String, data: Data)] = []
        for (name, items) in sets {
            do {
                seeds.append(("sealed-\(name)", Data(try ExportFile.seal(items, passphrase: passphrase, parameters: .testing))))
                seeds.append(("payload-\(name).json", try JSONEncoder().encode(["items": items])))
            } catch {
                FileHandle.standardError.write(Data("keychain-fuzz: no export-file seed \(name): \(error)\n".utf8))
            }
        }
        return seeds
    }

    /// The payload as JSONDecoder reads it.
    private struct Payload: Decodable { var items: [ExportFile.Item] }

    private static func run(_ data: Data) {
        if ExportFile.isExport(data) {
            // Parameters within the limits cost up to ~2 s each: those runs would only slow
            // the search down (the limits themselves are checked in the stored-item target).
            let header = Array(data.prefix(ExportFile.headerLength))
            func number(_ offset: Int) -> Int { header[offset..<(offset + 4)].reduce(0) { $0 << 8 | Int($1) } }
            let parameters = KDFParameters(iterations: number(17), memoryKiB: number(21), lanes: number(25))
            if parameters.isWithinLimits && (parameters.memoryKiB > 1024 || parameters.iterations > 2) { return }
            _ = try? ExportFile.open(data, passphrase: passphrase)
            return
        }
        // The payload as it is once decrypted. What reads, JSONDecoder (which read it before)
        // reads alike; it also lets by some that is not JSON (a trailing comma), refused here.
        guard let items = try? ExportFile.items(fromJSON: data) else { return }
        let decoded = try? JSONDecoder().decode(Payload.self, from: data)
        require(decoded?.items == items, "JSONDecoder reads the payload otherwise: \(String(describing: decoded?.items.count)) items")
        do {
            let sealed = try ExportFile.seal(items, passphrase: passphrase, parameters: .testing)
            let opened = try ExportFile.open(Data(sealed), passphrase: passphrase)
            require(opened == items, "items do not survive an export: \(items.count) -> \(opened.count)")
        } catch {
            fatalError("items that decode do not export: \(error)")
        }
    }
}
