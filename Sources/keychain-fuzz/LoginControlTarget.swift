import Foundation
import SecretService

/// The login control protocol's frames (what pam_secretd.so sends secretd at login): a frame
/// either parses to a request whose frame is the same bytes, or is refused; every prefix of a
/// whole frame is incomplete, never a request.
enum LoginControlTarget {
    /// The target.
    static let target = FuzzTarget(
        name: "login-control", summary: "login control requests (pam_secretd.so to secretd)", maximumLength: 4096,
        run: run)

    private static func run(_ data: Data) {
        let bytes = [UInt8](data)
        let parsed = bytes.withUnsafeBytes { buffer in Result { () throws(LoginControlRequest.ParseError) in try LoginControlRequest.parse(buffer) } }
        guard case .success(let request) = parsed else { return }
        require(request.frame == bytes, "a parsed frame re-encodes to other bytes")
        if let announced = bytes.withUnsafeBytes({ LoginControlRequest.announcedLength($0) }) {
            require(announced == bytes.count, "a request parsed from a frame of another announced length")
        }
        for cut in [0, 4, 7, bytes.count - 1] where cut >= 0 && cut < bytes.count {
            let prefix = Array(bytes[0..<cut])
            let result = prefix.withUnsafeBytes { buffer in Result { () throws(LoginControlRequest.ParseError) in try LoginControlRequest.parse(buffer) } }
            require(result.failureValue == .incomplete, "a prefix of \(cut) bytes was not incomplete")
        }
    }
}

extension Result {
    /// The error, if any.
    fileprivate var failureValue: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
