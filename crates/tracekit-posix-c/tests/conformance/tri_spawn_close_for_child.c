/* shall: A child created by posix_spawn of a process traced into a POSIX_TRACE_CLOSE_FOR_CHILD stream is not traced into it.
 * where: posix_spawn(), DESCRIPTION (Trace Inherit option)
 * option: TRI
 */
#include "conformance.h"

int main(int argc, char **argv) {
    trace_event_id_t id; tk_event e[64];
    if (argc > 1) {
        OK(posix_trace_eventid_open("spawned", &id));
        posix_trace_event(id, "s", 1);
        return 0;
    }
    trace_id_t t = tk_inherited_stream(POSIX_TRACE_CLOSE_FOR_CHILD, NULL);
    tk_spawn_self(argv[0]);
    int n = tk_read(t, 1, e, 64);
    for (int i = 0; i < n; i++) CHECK(e[i].id < 1024);
    OK(posix_trace_shutdown(t));
    return 0;
}
