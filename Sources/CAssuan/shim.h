// libassuan, for Sources/Pinentry/Pinentry.swift (the only Swift file that includes it).
#include <assuan.h>

/// ASSUAN_INVALID_FD is a cast macro.
static inline assuan_fd_t keychain_assuan_invalid_fd(void) { return ASSUAN_INVALID_FD; }
