@testable import SecretService
import Testing

/// The items of import batches in flight (``BatchesInFlight``): claimed by one batch at a time,
/// let go when it ends, and what waits runs then.
@Suite struct BatchesInFlightTests {
    @Test("an item is one batch's until it ends; ending twice, or claiming for an ended batch, does nothing; what waits runs at the next end, or at once with none in flight")
    func claims() {
        let inFlight = BatchesInFlight()
        var ran = 0
        inFlight.afterNextEnd { ran += 1 }
        #expect(ran == 1, "none in flight: at once")

        let first = inFlight.begin(), second = inFlight.begin()
        #expect(inFlight.claim(["n": "1"], for: first))
        #expect(inFlight.claim(["n": "1"], for: first), "its own item again")
        #expect(!inFlight.claim(["n": "1"], for: second))
        #expect(inFlight.claim(["n": "2"], for: second))
        #expect(inFlight.holdsAny(of: [["n": "3"], ["n": "2"]]) && !inFlight.holdsAny(of: [["n": "3"]]))
        #expect(inFlight.count == 2)

        inFlight.afterNextEnd { ran += 1 }
        inFlight.afterNextEnd { ran += 10 }
        inFlight.end(first)
        #expect(ran == 12, "both ran once")
        #expect(inFlight.claim(["n": "1"], for: second), "let go")
        #expect(!inFlight.claim(["n": "4"], for: first), "an ended batch claims nothing")
        inFlight.afterNextEnd { ran += 100 }
        inFlight.end(first)
        #expect(ran == 12, "ending again is no end")
        inFlight.end(second)
        #expect(ran == 112 && inFlight.count == 0 && !inFlight.holdsAny(of: [["n": "1"], ["n": "2"]]))
    }
}
