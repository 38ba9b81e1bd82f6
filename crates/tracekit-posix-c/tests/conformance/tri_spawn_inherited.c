/* shall: A child created by posix_spawn of a process traced into a POSIX_TRACE_INHERITED stream is traced into that stream.
 * where: posix_spawn(), DESCRIPTION (Trace Inherit option)
 * option: TRI
 * deviation: As for exec: the wrapper of posix_spawn passes the stream open and names it in the child's environment. glibc's system() and popen() spawn through glibc-internal calls that no library can wrap: their children are not traced.
 */
#include "conformance.h"

int main(int argc, char **argv) {
    trace_event_id_t id; tk_event e[64];
    if (argc > 1) {
        OK(posix_trace_eventid_open("spawned", &id));
        posix_trace_event(id, "s", 1);
        return 0;
    }
    trace_id_t t = tk_inherited_stream(POSIX_TRACE_INHERITED, NULL);
    pid_t p = tk_spawn_self(argv[0]);
    int n = tk_read(t, 1, e, 64), k = 0;
    for (int i = 0; i < n; i++) k += e[i].id >= 1024 && e[i].pid == p;
    EQ(k, 1);
    OK(posix_trace_shutdown(t));
    return 0;
}
