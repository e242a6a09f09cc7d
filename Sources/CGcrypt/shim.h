// libgcrypt for Sources/SecretCrypto/Gcrypt.swift and SecureBytes.swift (the only Swift files that include it).
// gcry_control is variadic and some helpers are macros, so they are wrapped here.
#include <gcrypt.h>

/// Initialises libgcrypt once: the kernel's random generator (getrandom) in place of
/// libgcrypt's own pool, version check, a secure-memory pool of `secmem` bytes that may grow,
/// and GCRYCTL_INITIALIZATION_FINISHED. Returns the library version, or NULL when the
/// installed library is older than the headers.
///
/// The kernel's generator is the one the rest of the system trusts; libgcrypt's own pool would
/// be mixed again on every cipher handle opened (getrusage and clock_gettime, then a hash of
/// the pool: 2 system calls a cipher, and about 4% of a lookup's CPU in secretd). libgcrypt takes the
/// preference only before its first initialisation, so it is asked for first.
static inline const char *keychain_gcry_initialize(size_t secmem) {
    gcry_control(GCRYCTL_SET_PREFERRED_RNG_TYPE, GCRY_RNG_TYPE_SYSTEM);
    const char *version = gcry_check_version(GCRYPT_VERSION);
    if (version == NULL) return NULL;
    gcry_control(GCRYCTL_SUSPEND_SECMEM_WARN);
    gcry_control(GCRYCTL_INIT_SECMEM, secmem, 0);
    gcry_control(GCRYCTL_AUTO_EXPAND_SECMEM, secmem, 0);
    gcry_control(GCRYCTL_RESUME_SECMEM_WARN);
    gcry_control(GCRYCTL_INITIALIZATION_FINISHED, 0);
    return version;
}

/// Whether libgcrypt has been initialised (by us or by another library in the process).
static inline int keychain_gcry_is_initialized(void) {
    return gcry_control(GCRYCTL_INITIALIZATION_FINISHED_P) ? 1 : 0;
}
