// The items of import batches planned and not yet written, so that a batch planned meanwhile
// does not plan one of them again (issue 51, point 6).

import DBusValues

/// The items (by ``ItemIdentity/of(_:)``) of the import batches (``ItemBatchWrite``) between
/// their plan and their answer. The store shows such an item only once its batch is written,
/// so a batch planned meanwhile, by the same client (whose next batch is planned while the one
/// before is written) or by another, would create it a second time or replace a version about
/// to change. A batch claims each item as it plans it; one that meets an item another holds
/// lets all of its own go and is planned again once a batch has ended (so two batches never
/// wait for each other). What the store holds already is the store's to tell (``ItemBatchWrite``'s `find`).
final class BatchesInFlight {
    /// One batch's hold on its items, from ``begin()`` until ``end(_:)``.
    struct Batch: Hashable {
        fileprivate let number: Int
    }

    /// An item's identity with its hash, worked out once (hashing a dictionary hashes each of
    /// its entries with a hasher of its own): an item is looked up once as it is claimed and
    /// once as it is let go.
    private struct Identity: Hashable {
        let attributes: [String: String]
        let hash: Int

        init(_ attributes: [String: String]) {
            self.attributes = attributes
            hash = attributes.hashValue
        }

        func hash(into hasher: inout Hasher) { hasher.combine(hash) }
        static func == (left: Identity, right: Identity) -> Bool { left.hash == right.hash && left.attributes == right.attributes }
    }

    /// Which batch holds each item.
    private var holders: [Identity: Int] = [:]
    /// The items each batch holds.
    private var claims: [Int: [Identity]] = [:]
    private var lastNumber = 0
    /// What runs once a batch has ended (a batch given up, to be planned again).
    private var waiting: [() -> Void] = []

    /// A new batch, holding nothing yet.
    func begin() -> Batch {
        lastNumber += 1
        claims[lastNumber] = []
        return Batch(number: lastNumber)
    }

    /// Claims `identity` for `batch`; false when another batch holds it (`batch` holding it
    /// already is true).
    func claim(_ attributes: [String: String], for batch: Batch) -> Bool {
        let identity = Identity(attributes)
        if let holder = holders[identity] { return holder == batch.number }
        guard claims[batch.number] != nil else { return false }
        holders[identity] = batch.number
        claims[batch.number]!.append(identity)
        return true
    }

    /// Whether any batch holds one of `identities` (a batch written at once on the loop, which
    /// need not claim them, asks this first).
    func holdsAny(of identities: [[String: String]]) -> Bool {
        !holders.isEmpty && identities.contains { holders[Identity($0)] != nil }
    }

    /// Ends `batch` (once; later calls do nothing): its items are let go, and what waited for
    /// a batch to end runs.
    func end(_ batch: Batch) {
        guard let held = claims.removeValue(forKey: batch.number) else { return }
        for identity in held { holders[identity] = nil }
        let due = waiting
        waiting = []
        for body in due { body() }
    }

    /// `reply`, ending `batch` first: what a holder answers with, so that its every answer
    /// lets its items go.
    func ending(_ batch: Batch, before reply: @escaping (Result<DBusValue, SecretServiceError>) -> Void)
        -> (Result<DBusValue, SecretServiceError>) -> Void
    {
        { [self] result in
            end(batch)
            reply(result)
        }
    }

    /// Runs `body` once a batch has ended; at once when none is in flight.
    func afterNextEnd(_ body: @escaping () -> Void) {
        if claims.isEmpty { return body() }
        waiting.append(body)
    }

    /// Runs `body` once a batch has ended, as ``afterNextEnd(_:)``, with `keyring`'s accessor
    /// as it is now (the caller whose call waits: the audit trail names it); `failed` with
    /// what it throws.
    func afterNextEnd(
        as keyring: Keyring, _ body: @escaping () throws(SecretServiceError) -> Void,
        failed: @escaping (SecretServiceError) -> Void
    ) {
        let accessor = keyring.accessor
        afterNextEnd {
            keyring.acting(as: accessor) {
                do throws(SecretServiceError) { try body() } catch { failed(error) }
            }
        }
    }

    /// How many batches are in flight.
    var count: Int { claims.count }
}
