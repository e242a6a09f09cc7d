// Folding the write-ahead log into the database file on a thread of its own (SQLite's
// checkpoint), so that the main loop's commits only append to the log: a checkpoint after a
// large write copied its pages a second time, on the loop, while every other client waited.

internal import CSQLite
import Glibc
import KeychainCore

/// A second connection to the database, on a thread of its own, that runs SQLite's passive
/// checkpoint whenever the main connection's commits have grown the write-ahead log past
/// ``requestFrames`` pages. A passive checkpoint waits for nobody: it copies what no reader
/// still needs, while the main connection goes on reading and writing.
///
/// The log is restarted from its beginning by the main connection's next write once a
/// checkpoint has copied all of it and that connection's read snapshot began after it
/// (``Database/renewSnapshotIfCheckpointed()`` lets an old snapshot go). Should the log still
/// reach ``synchronousFrames`` pages, the main connection checkpoints itself after its commit,
/// as SQLite does by default, so the log stays bounded whatever the timing.
final class BackgroundCheckpointer: @unchecked Sendable {
    /// Log pages after a commit from which a checkpoint is asked for (SQLite's default
    /// automatic checkpoint).
    static let requestFrames: Int32 = 1_000
    /// Log pages after a commit from which the main connection checkpoints in place.
    static let synchronousFrames: Int32 = 16_384

    private let handle: OpaquePointer
    private var lock = pthread_mutex_t()
    private var wake = pthread_cond_t()
    private var requested = false
    private var stopping = false
    private var running = false
    private var completed = false
    private var finishedCount = 0

    /// Opens its connection to the database at `path` and starts its thread; nil when either
    /// cannot be had (the main connection then checkpoints by itself, as before).
    init?(path: String) {
        var db: OpaquePointer?
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK, let db else {
            if let db { sqlite3_close_v2(db) }
            return nil
        }
        handle = db
        // The checkpoint syncs the log before copying and the file after, as the main
        // connection's own did.
        sqlite3_exec(db, "PRAGMA synchronous = FULL", nil, nil, nil)
        pthread_mutex_init(&lock, nil)
        pthread_cond_init(&wake, nil)
        running = true
        guard DetachedThread.start(named: "secretd-ckpt", { [self] in serve() }) else {
            running = false
            sqlite3_close_v2(db)
            return nil
        }
    }

    deinit {
        pthread_cond_destroy(&wake)
        pthread_mutex_destroy(&lock)
    }

    /// Asks for a checkpoint; returns at once.
    func request() {
        pthread_mutex_lock(&lock)
        requested = true
        pthread_cond_broadcast(&wake)
        pthread_mutex_unlock(&lock)
    }

    /// Whether a checkpoint finished since the last time this was asked (and forgets it).
    func takeCompleted() -> Bool {
        pthread_mutex_lock(&lock)
        defer { pthread_mutex_unlock(&lock) }
        let value = completed
        completed = false
        return value
    }

    /// How many checkpoints have finished (tests wait on it).
    var finished: Int {
        pthread_mutex_lock(&lock)
        defer { pthread_mutex_unlock(&lock) }
        return finishedCount
    }

    /// Waits for a running checkpoint to finish, ends the thread and closes its connection.
    func stop() {
        pthread_mutex_lock(&lock)
        stopping = true
        pthread_cond_broadcast(&wake)
        while running { pthread_cond_wait(&wake, &lock) }
        pthread_mutex_unlock(&lock)
        sqlite3_close_v2(handle)
    }

    private func serve() {
        pthread_mutex_lock(&lock)
        while true {
            while !requested && !stopping { pthread_cond_wait(&wake, &lock) }
            if stopping { break }
            requested = false
            pthread_mutex_unlock(&lock)
            // Busy (the main connection checkpointing at its limit) or failed: the next
            // request tries again; the main connection's own limit keeps the log bounded.
            let status = sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
            pthread_mutex_lock(&lock)
            if status == SQLITE_OK {
                completed = true
                finishedCount += 1
            }
        }
        running = false
        pthread_cond_broadcast(&wake)
        pthread_mutex_unlock(&lock)
    }
}

extension Database {
    /// From now on the write-ahead log is folded into the file by a ``BackgroundCheckpointer``
    /// rather than after the commit that filled it; false when its connection or thread cannot
    /// be had (checkpoints stay as they were).
    @discardableResult
    func checkpointInBackground() -> Bool {
        guard !isClosed, checkpointer == nil, let started = BackgroundCheckpointer(path: path) else { return false }
        checkpointer = started
        sqlite3_wal_hook(handle, { context, db, _, frames in
            let checkpointer = Unmanaged<BackgroundCheckpointer>.fromOpaque(context!).takeUnretainedValue()
            if frames >= BackgroundCheckpointer.synchronousFrames {
                sqlite3_wal_checkpoint_v2(db, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
            } else if frames >= BackgroundCheckpointer.requestFrames {
                checkpointer.request()
            }
            return SQLITE_OK
        }, Unmanaged.passUnretained(started).toOpaque())
        return true
    }

    /// Stops the background checkpoints (``checkpointInBackground()``): the main connection
    /// checkpoints after its commits again, SQLite's default. Returns whether they ran.
    @discardableResult
    func stopBackgroundCheckpoints() -> Bool {
        guard let checkpointer else { return false }
        if !isClosed { sqlite3_wal_autocheckpoint(handle, BackgroundCheckpointer.requestFrames) }
        checkpointer.stop()
        self.checkpointer = nil
        return true
    }

    /// Lets go of a group's read snapshot (nothing written in it) when a background checkpoint
    /// has finished since it began: the next one then starts after the checkpoint, and the next
    /// write can restart the log from its beginning instead of growing it. The new snapshot sees
    /// the same data, and what the apart writer (``ApartWriter``) committed since, if anything.
    func renewSnapshotIfCheckpointed() {
        guard let checkpointer, hasOpenGroup, !hasPendingCommit, transactionDepth == 0, checkpointer.takeCompleted() else { return }
        try? commitPending()
    }
}
