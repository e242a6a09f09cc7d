// libsystemd's D-Bus library (sd-bus), secretd's bus connection. Swift reaches only its
// functions of fixed arguments; see Sources/SecretService/SDBus.swift.
#include <systemd/sd-bus.h>
#include <systemd/sd-id128.h>
