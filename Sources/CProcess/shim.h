// Process-level calls for secretd (hardening, memory) and for naming threads; prctl is variadic,
// so it is wrapped here.
#include <sys/prctl.h>
#include <sys/resource.h>

/// Makes the process non-dumpable: no core files, and no ptrace by other same-user processes.
static inline int keychain_set_non_dumpable(void) {
    struct rlimit none = {0, 0};
    setrlimit(RLIMIT_CORE, &none);
    return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

#include <malloc.h>

/// Hands freed heap memory back to the system (glibc keeps it otherwise).
static inline int keychain_release_free_memory(void) {
    return malloc_trim(0);
}

/// Names the calling thread (at most 15 bytes show in ps and /proc).
static inline int keychain_name_this_thread(const char *name) {
    return prctl(PR_SET_NAME, name, 0, 0, 0);
}
