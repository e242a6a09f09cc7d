// GIO/GLib headers. glib-unix.h is not pulled in by gio.h (g_unix_signal_add).
#include <gio/gio.h>
#include <glib-unix.h>
