import SecretStore

/// What the writes of sealed item rows off the loop share once their seal is back on the loop
/// (``LargeItemUpdate``, ``CollectionObject``'s large `CreateItem`, ``ItemBatchWrite``): the
/// rows are written in one transaction of the store's second connection (``ApartWriter``),
/// their audit entries with them (``Keyring/recording(_:)``); then, on the loop as the
/// accessor who asked, the writes are published and the call answered. When a row to replace
/// was written or deleted by someone else meanwhile (`notFound`), the call is done again on
/// the loop with what is there then; any other failure is answered.
struct ApartWriteStep {
    /// What the objects share.
    let provider: Provider
    /// Who asked for the write: the keyring's accessor when it is published.
    let accessor: Accessor

    /// Whether every keyring `written` names, with the keys its rows were sealed with, is still
    /// there and unlocked (nil when not: the problem is then answered through `reply`) and still
    /// has those keys (false when it was locked and unlocked meanwhile: the rows are sealed for
    /// keys it no longer has, and the call is to be done on the loop instead).
    func keysUnchanged<Answer>(
        _ written: [(collection: Store.CollectionRecord, sealedWith: Store.ItemKeys)],
        reply: (Result<Answer, SecretServiceError>) -> Void
    ) -> Bool? {
        var same = true
        for (collection, keys) in written {
            switch provider.keyring.keysAfterSealing(in: collection, sealedWith: keys) {
            case .success(let held): same = same && held.same
            case .failure(let problem):
                reply(.failure(problem))
                return nil
            }
        }
        return same
    }

    /// What follows the seal: `writes` (each row, for the audit trail) written by `write`, which
    /// gets the work that records them; then `published` with what it returned and whether the
    /// audit trail recorded them (their events are then published as recorded), which gives
    /// the answer once it has published them (on a later turn of the loop, if it likes).
    /// `onLoop` is the call done on the loop; `reply` gets the answer or the failure.
    func write<Written, Answer>(
        _ writes: [Keyring.ApartItemWrite],
        _ write: @escaping @Sendable (_ recording: ApartWriter.Recording?) throws(StoreError) -> Written,
        published: @escaping (_ written: Written, _ recorded: Bool, _ answer: @escaping (Answer) -> Void) -> Void,
        onLoop: @escaping () -> Result<Answer, SecretServiceError>,
        reply: @escaping (Result<Answer, SecretServiceError>) -> Void
    ) -> SealingQueue.AfterSealing {
        let recording = provider.keyring.recording(writes)
        let recorded = recording != nil
        return .write({ Result { () throws(StoreError) in try write(recording) } }, thenInTurns: { [provider, accessor] written, finished in
            provider.keyring.acting(as: accessor) {
                switch written {
                case .success(let value):
                    published(value, recorded) { answer in
                        reply(.success(answer))
                        finished()
                    }
                case .failure(.notFound):
                    reply(onLoop())  // written or deleted meanwhile: again, with what is there now
                    finished()
                case .failure(let error):
                    reply(.failure(provider.storeFailure(error)))
                    finished()
                }
            }
        })
    }
}
