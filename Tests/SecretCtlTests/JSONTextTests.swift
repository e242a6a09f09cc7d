import Foundation
import Testing

@testable import SecretCtl

@Suite struct JSONTextTests {
    @Test("--json output: compact, keys sorted, nil as null, every control character escaped, parses back")
    func output() throws {
        let pid: Int? = nil
        let value: [String: Any?] = [
            "service": "svc/one", "pid": pid, "count": 3, "locked": false, "nested": ["b": "2", "a": "1"] as [String: String],
            "list": [["x": true] as [String: Any?], "quote \" back \\ tab \t nl \n bell \u{07} é 🔑"] as [Any],
        ]
        let text = try #require(JSONText.encode(value))
        #expect(text.hasPrefix(#"{"count":3,"list":[{"x":true},"quote \" back \\ tab \t nl \n bell \u0007 é 🔑"],"locked":false,"nested":{"a":"1","b":"2"},"pid":null,"service":"svc/one"}"#), "\(text)")
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(parsed["service"] as? String == "svc/one" && parsed["pid"] is NSNull)
        #expect(((parsed["list"] as? [Any])?[1] as? String) == "quote \" back \\ tab \t nl \n bell \u{07} é 🔑")
        #expect(JSONText.encode(["date": Date()]) == nil, "a value JSON has no form for is refused")
        // Optionals held in an Any: nil is null, else what they hold, at any depth.
        let some: Int? = 5
        let twice: Int?? = .some(nil)
        let label: String? = "x"
        let held: [String: Any?] = ["some": some as Any, "twice": twice as Any, "label": label as Any, "list": [some as Any, twice as Any]]
        #expect(JSONText.encode(held) == #"{"label":"x","list":[5,null],"some":5,"twice":null}"#)
        #expect(JSONText.encode([Date()] as [Any]) == nil)
    }
}
