/* The floor of bench/startup.sh: a program that does nothing but what activation needs. It
 * connects to the session bus, owns org.freedesktop.secrets and answers the one call the bench
 * times, Properties.Get(org.freedesktop.Secret.Service, Collections), with one collection path;
 * it stops on SIGTERM (the default action). Built by bench/startup.sh with cc and libsystemd's
 * sd-bus, the library secretd serves the bus with. */
#include <systemd/sd-bus.h>
#include <stdio.h>

static int collections(sd_bus *bus, const char *path, const char *interface, const char *property,
                       sd_bus_message *reply, void *userdata, sd_bus_error *error) {
    (void)bus, (void)path, (void)interface, (void)property, (void)userdata, (void)error;
    return sd_bus_message_append(reply, "ao", 1, "/org/freedesktop/secrets/collection/login");
}

static const sd_bus_vtable service[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_PROPERTY("Collections", "ao", collections, 0, SD_BUS_VTABLE_PROPERTY_EMITS_INVALIDATION),
    SD_BUS_VTABLE_END,
};

int main(void) {
    sd_bus *bus = NULL;
    int result = sd_bus_open_user(&bus);
    if (result >= 0)
        result = sd_bus_add_object_vtable(bus, NULL, "/org/freedesktop/secrets", "org.freedesktop.Secret.Service", service, NULL);
    if (result >= 0)
        result = sd_bus_request_name(bus, "org.freedesktop.secrets", 0);
    while (result >= 0) {
        result = sd_bus_process(bus, NULL);
        if (result == 0)
            result = sd_bus_wait(bus, (uint64_t)-1);
    }
    fprintf(stderr, "floor-provider: %d\n", result);
    return 1;
}
