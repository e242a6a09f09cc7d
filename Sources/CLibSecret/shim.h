// The libsecret headers, for the Keychain target's single chokepoint file
// (Sources/Keychain/Internal/LibSecret.swift). Nothing else includes this.
// SECRET_API_SUBJECT_TO_CHANGE exposes the path-based calls (secret-paths.h), which create
// items and resolve aliases without building collection proxies (a collection proxy loads the
// paths of all its items, which makes every write cost O(items)). They have not changed since
// libsecret 0.7.
#define SECRET_API_SUBJECT_TO_CHANGE 1
#include <libsecret/secret.h>
