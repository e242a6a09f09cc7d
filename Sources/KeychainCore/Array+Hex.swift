extension Array where Element == UInt8 {
    /// The bytes in lower-case hex, two digits each.
    package var hexString: String {
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] }, as: UTF8.self)
    }
}
