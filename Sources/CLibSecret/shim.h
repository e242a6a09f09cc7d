// The libsecret headers, for the Keychain target's single chokepoint file
// (Sources/Keychain/Internal/LibSecret.swift). Nothing else includes this.
#include <libsecret/secret.h>
