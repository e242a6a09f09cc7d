@testable import SecretService
import Testing

/// The limits on calls waiting in secretd, per client and for all clients, without a bus.
@Suite struct CallQuotaTests {
    let quota = CallQuota(limits: .init(calls: 3, silentCalls: 1, bytes: 10_000, overhead: 100))

    @Test("calls over the limit are refused, the first refusal flagged; replies make room again")
    func callLimit() {
        for serial in 1...3 { #expect(quota.admit(sender: ":1.1", serial: UInt32(serial), bytes: 10, silent: false) == .admitted) }
        #expect(quota.admit(sender: ":1.1", serial: 4, bytes: 10, silent: false) == .refused(first: true))
        #expect(quota.admit(sender: ":1.1", serial: 5, bytes: 10, silent: false) == .refused(first: false))
        // Other clients have quotas of their own.
        #expect(quota.admit(sender: ":1.2", serial: 1, bytes: 10, silent: false) == .admitted)
        #expect(quota.replied(to: ":1.1", serial: 2) == .init())
        #expect(quota.admit(sender: ":1.1", serial: 6, bytes: 10, silent: false) == .admitted)
        // Refusals are flagged first once per client.
        #expect(quota.admit(sender: ":1.1", serial: 7, bytes: 10, silent: false) == .refused(first: false))
        #expect(quota.waiting(for: ":1.1").calls == 3)
        // A reply to a call it never counted (a refusal, another connection's) changes nothing.
        #expect(quota.replied(to: ":1.1", serial: 99) == .init())
        #expect(quota.waiting(for: ":1.1").calls == 3)
    }

    @Test("a call admitted by part of its size is counted whole once measured: the client's next calls see it, and its reply frees all of it")
    func recount() {
        #expect(quota.admit(sender: ":1.1", serial: 1, bytes: 1_000, silent: false) == .admitted)
        quota.recount(sender: ":1.1", serial: 1, bytes: 9_000)
        #expect(quota.waiting(for: ":1.1").bytes == 9_100)
        #expect(quota.admit(sender: ":1.1", serial: 2, bytes: 1_000, silent: false) == .refused(first: true))
        #expect(quota.admit(sender: ":1.1", serial: 3, bytes: 500, silent: false) == .admitted)
        quota.recount(sender: ":1.1", serial: 99, bytes: 1)  // not waiting: nothing changes
        #expect(quota.waiting(for: ":1.1").bytes == 9_700)
        _ = quota.replied(to: ":1.1", serial: 1)
        _ = quota.replied(to: ":1.1", serial: 3)
        #expect(quota.waiting(for: ":1.1") == (0, 0))
    }

    @Test("calls expecting no reply have a lower limit, and the reply secretd sends them is dropped")
    func silentCalls() {
        #expect(quota.admit(sender: ":1.1", serial: 1, bytes: 0, silent: true) == .admitted)
        #expect(quota.admit(sender: ":1.1", serial: 2, bytes: 0, silent: true) == .refused(first: true))
        #expect(quota.admit(sender: ":1.1", serial: 3, bytes: 0, silent: false) == .admitted)
        #expect(quota.replied(to: ":1.1", serial: 1).drop)
        #expect(!quota.replied(to: ":1.1", serial: 3).drop)
        #expect(quota.waiting(for: ":1.1").calls == 0)
    }

    @Test("arguments count against a byte limit, but one call larger than it alone is let through")
    func byteLimit() {
        #expect(quota.admit(sender: ":1.1", serial: 1, bytes: 50_000, silent: false) == .admitted)
        #expect(quota.admit(sender: ":1.1", serial: 2, bytes: 10, silent: false) == .refused(first: true))
        #expect(quota.replied(to: ":1.1", serial: 1) == .init())
        #expect(quota.admit(sender: ":1.1", serial: 3, bytes: 4_000, silent: false) == .admitted)
        #expect(quota.admit(sender: ":1.1", serial: 4, bytes: 4_000, silent: false) == .admitted)
        #expect(quota.admit(sender: ":1.1", serial: 5, bytes: 4_000, silent: false) == .refused(first: false))
        #expect(quota.waiting(for: ":1.1").bytes == 8_200)
    }

    @Test("a client that disconnects is forgotten")
    func forget() {
        #expect(quota.admit(sender: ":1.1", serial: 1, bytes: 10, silent: true) == .admitted)
        quota.forget(":1.1")
        #expect(quota.waiting(for: ":1.1").calls == 0)
        #expect(quota.replied(to: ":1.1", serial: 1) == .init())
    }

    @Test("all clients together have a limit, from the open files: over it every client is refused, flagged first once until none wait; replies and departures make room")
    func allClientsLimit() {
        let quota = CallQuota(limits: .init(calls: 10, silentCalls: 10, bytes: 1 << 20, allClients: 3))
        #expect(quota.admit(sender: ":1.1", serial: 1, bytes: 0, silent: false) == .admitted)
        #expect(quota.admit(sender: ":1.1", serial: 2, bytes: 0, silent: false) == .admitted)
        #expect(quota.admit(sender: ":1.2", serial: 1, bytes: 0, silent: false) == .admitted)
        #expect(quota.admit(sender: ":1.3", serial: 1, bytes: 0, silent: false) == .refusedAllClients(first: true))
        #expect(quota.admit(sender: ":1.1", serial: 3, bytes: 0, silent: false) == .refusedAllClients(first: false))
        #expect(quota.replied(to: ":1.1", serial: 1) == .init())
        #expect(quota.admit(sender: ":1.3", serial: 2, bytes: 0, silent: false) == .admitted)
        quota.forget(":1.1")
        #expect(quota.admit(sender: ":1.4", serial: 1, bytes: 0, silent: false) == .admitted)
        #expect(quota.admit(sender: ":1.4", serial: 2, bytes: 0, silent: false) == .refusedAllClients(first: false))
        // Once no call waits, the next refusal is flagged first again.
        quota.forget(":1.2")
        quota.forget(":1.3")
        #expect(quota.replied(to: ":1.4", serial: 1) == .init())
        for serial in 10...12 { #expect(quota.admit(sender: ":1.5", serial: UInt32(serial), bytes: 0, silent: false) == .admitted) }
        #expect(quota.admit(sender: ":1.5", serial: 13, bytes: 0, silent: false) == .refusedAllClients(first: true))
        // The bound: 253 descriptors a call (Linux's most), 1,024 kept for secretd, room for 32
        // calls past the limit; never under 1,024 calls.
        #expect(CallQuota.Limits.descriptorBound(openFiles: 524_288) == 2_036)
        #expect(CallQuota.Limits.descriptorBound(openFiles: 20_000) == 1_024)
        #expect(CallQuota.Limits.soundOpenFiles == 268_192)
        #expect(CallQuota.Limits.descriptorBound(openFiles: CallQuota.Limits.soundOpenFiles) == CallQuota.Limits.minimumAllClients)
        let held = (CallQuota.Limits.descriptorBound(openFiles: 524_288) + CallQuota.Limits.roomForFewCallsBound)
            * CallQuota.Limits.descriptorsPerMessage
        #expect(held + CallQuota.Limits.reservedFiles <= 524_288)
    }

    @Test("over all clients' limit, clients with few calls waiting still get some room, all of them together")
    func roomForFewCalls() {
        let quota = CallQuota(limits: .init(calls: 10, silentCalls: 10, bytes: 1 << 20, allClients: 3, roomForFewCalls: 2, fewCalls: 2))
        for serial in 1...3 { #expect(quota.admit(sender: ":1.1", serial: UInt32(serial), bytes: 0, silent: false) == .admitted) }
        // The flooder is refused; a client with one call at a time is not.
        #expect(quota.admit(sender: ":1.1", serial: 4, bytes: 0, silent: false) == .refusedAllClients(first: true))
        #expect(quota.admit(sender: ":1.2", serial: 1, bytes: 0, silent: false) == .admitted)
        #expect(quota.admit(sender: ":1.2", serial: 2, bytes: 0, silent: false) == .admitted)
        // Two waiting is no longer few; and the room is shared: a third client finds it used up.
        #expect(quota.admit(sender: ":1.2", serial: 3, bytes: 0, silent: false) == .refusedAllClients(first: false))
        #expect(quota.admit(sender: ":1.3", serial: 1, bytes: 0, silent: false) == .refusedAllClients(first: false))
        #expect(quota.replied(to: ":1.2", serial: 1) == .init())
        #expect(quota.admit(sender: ":1.3", serial: 2, bytes: 0, silent: false) == .admitted)
    }

    @Test("the last reply of a backlog says so, so its memory can be handed back")
    func backlog() {
        let quota = CallQuota(limits: .init(calls: 5000, silentCalls: 1, bytes: 1 << 30))
        for serial in 1...UInt32(CallQuota.backlog) { _ = quota.admit(sender: ":1.1", serial: serial, bytes: 0, silent: false) }
        for serial in 1..<UInt32(CallQuota.backlog) { #expect(quota.replied(to: ":1.1", serial: serial) == .init()) }
        #expect(quota.replied(to: ":1.1", serial: UInt32(CallQuota.backlog)).drainedBacklog)
        _ = quota.admit(sender: ":1.1", serial: 9999, bytes: 0, silent: false)
        #expect(!quota.replied(to: ":1.1", serial: 9999).drainedBacklog)
    }
}
