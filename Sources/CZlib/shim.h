// zlib for Sources/SecretCtl/Zlib.swift (the only Swift file that includes it): gzip
// decompression of KeePass databases. inflateInit2 and deflateInit2 are macros, so they are
// wrapped here.
#include <zlib.h>

/// inflateInit2 for gzip streams only (window bits 15, +16 for the gzip wrapper).
static inline int secretctl_inflate_init_gzip(z_stream *stream) {
    return inflateInit2(stream, 15 + 16);
}

/// deflateInit2 writing a gzip stream (for tests that write compressed databases).
static inline int secretctl_deflate_init_gzip(z_stream *stream) {
    return deflateInit2(stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
}
