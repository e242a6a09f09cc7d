// Checking the store: SQLite's integrity check of the whole file, and every item of an
// unlocked collection opened with its keys (`secretctl check`, secretd's Maintenance1).

extension Store {
    /// What SQLite's `PRAGMA integrity_check` finds in the whole database: empty when it says
    /// `ok`, else its findings (at most 100, one per line as SQLite words them).
    public func integrityProblems() throws(StoreError) -> [String] {
        let rows = try database.rows("PRAGMA integrity_check")
        let findings = rows.compactMap { $0.first?.text }
        return findings == ["ok"] ? [] : (findings.isEmpty ? ["no answer from the integrity check"] : findings)
    }

    /// Opens every item of `collection` that `keys` open, and decodes what it holds: an item
    /// whose seal fails (tampered, truncated, moved to another row) is named in the result
    /// with what failed; items sealed with a key not held are counted as not checked.
    /// Nothing is written, and no secret is kept.
    public func checkSeals(of collection: CollectionRecord, keys: ItemKeys) throws(StoreError) -> SealCheck {
        var check = SealCheck()
        for item in try search([:], in: collection) {
            guard keys.opens(item) else {
                check.notChecked += 1
                continue
            }
            do {
                _ = try readItem(item, in: collection, keys: keys)
                check.opened += 1
            } catch .notFound {
                continue  // deleted since the list was read
            } catch {
                check.failures.append(.init(itemID: item.id, reason: "\(error)"))
            }
        }
        return check
    }
}
