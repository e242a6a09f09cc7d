// The only file that calls zlib: gzip, as KeePass databases compress their XML.

internal import CZlib

/// gzip streams (RFC 1952), whole buffers at a time.
package enum Zlib {
    /// What went wrong: a stream that is damaged, truncated, or larger than asked for.
    package struct Failure: Error, Equatable, Sendable {
        /// A one-line description (zlib's message, or which limit was passed).
        package var message: String
    }

    /// The decompressed bytes of the gzip stream `compressed`, at most `limit` of them. Every
    /// buffer that held part of the output is wiped before it is released (the output is a
    /// database's plain text).
    package static func gunzip(_ compressed: UnsafeRawBufferPointer, limit: Int) throws(Failure) -> [UInt8] {
        var stream = z_stream()
        guard secretctl_inflate_init_gzip(&stream) == Z_OK else { throw Failure(message: "zlib cannot start") }
        defer { inflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: min(max(compressed.count * 4, 4096), limit))
        var produced = 0
        stream.next_in = UnsafeMutablePointer(mutating: compressed.bindMemory(to: Bytef.self).baseAddress)
        stream.avail_in = uInt(compressed.count)
        while true {
            if produced == output.count {
                guard output.count < limit else { throw Failure(message: "it decompresses to more than \(limit) bytes") }
                var larger = [UInt8](repeating: 0, count: min(output.count * 2, limit))
                output.withUnsafeBytes { old in larger.withUnsafeMutableBytes { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: old[0..<produced])) } }
                output.wipe()
                output = larger
            }
            let status = output.withUnsafeMutableBytes { buffer -> Int32 in
                stream.next_out = buffer.baseAddress!.assumingMemoryBound(to: Bytef.self) + produced
                stream.avail_out = uInt(buffer.count - produced)
                let status = inflate(&stream, Z_NO_FLUSH)
                produced = buffer.count - Int(stream.avail_out)
                return status
            }
            switch status {
            case Z_STREAM_END:
                var result = Array(output[0..<produced])
                output.wipe()
                if stream.avail_in != 0 {
                    result.wipe()
                    throw Failure(message: "there are bytes after the compressed data")
                }
                return result
            case Z_OK: continue
            case Z_BUF_ERROR where produced < output.count:
                output.wipe()
                throw Failure(message: "the compressed data is truncated")
            case Z_BUF_ERROR: continue
            default:
                output.wipe()
                throw Failure(message: stream.msg.map { String(cString: $0) } ?? "the compressed data is damaged")
            }
        }
    }

    /// `bytes` as a gzip stream (for tests that write compressed databases).
    package static func gzip(_ bytes: [UInt8]) -> [UInt8] {
        var stream = z_stream()
        guard secretctl_deflate_init_gzip(&stream) == Z_OK else { fatalError("zlib cannot start") }
        defer { deflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(bytes.count))) + 32)
        let written = bytes.withUnsafeBytes { input in
            output.withUnsafeMutableBytes { out in
                stream.next_in = UnsafeMutablePointer(mutating: input.bindMemory(to: Bytef.self).baseAddress)
                stream.avail_in = uInt(input.count)
                stream.next_out = out.baseAddress!.assumingMemoryBound(to: Bytef.self)
                stream.avail_out = uInt(out.count)
                guard deflate(&stream, Z_FINISH) == Z_STREAM_END else { fatalError("zlib cannot compress") }
                return out.count - Int(stream.avail_out)
            }
        }
        return Array(output[0..<written])
    }
}
