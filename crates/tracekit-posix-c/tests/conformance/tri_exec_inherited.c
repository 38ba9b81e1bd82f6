/* shall: A child traced into an inherited stream that calls exec goes on being traced into it; the new image does not inherit the name-to-id mapping and maps its names itself.
 * where: exec, DESCRIPTION (Trace option); fork(), DESCRIPTION (Trace Inherit option)
 * option: TRI
 * deviation: The stream's descriptor travels to the new image open, named in the environment variable TRACEKIT_POSIX_INHERIT that the library's exec wrappers add; a program that clears its environment before exec, or that is not linked with the library, is not traced after it.
 */
#include "conformance.h"

static void exec_child(void *argv0) { execl(argv0, argv0, "child", (char *)NULL); _exit(3); }
int main(int argc, char **argv) {
    trace_event_id_t id; tk_event e[64]; char name[TRACE_EVENT_NAME_MAX + 1];
    if (argc > 1) { /* the exec'd image */
        OK(posix_trace_eventid_open("new-image", &id));
        for (int i = 0; i < 5; i++) posix_trace_event(id, &i, sizeof i);
        return 0;
    }
    trace_id_t t = tk_inherited_stream(POSIX_TRACE_INHERITED, "exec.log");
    OK(posix_trace_eventid_open("parent", &id));
    posix_trace_event(id, "p", 1);
    pid_t p = tk_fork(exec_child, argv[0]);
    EQ(tk_wait(p), 0);
    OK(posix_trace_shutdown(t));
    trace_id_t lt;
    int n = tk_read_log("exec.log", e, 64, &lt), k = 0;
    for (int i = 0; i < n; i++) {
        if (e[i].id < 1024 || e[i].pid != p) continue;
        OK(posix_trace_eventid_get_name(lt, e[i].id, name)); CHECK(strcmp(name, "new-image") == 0);
        int v; memcpy(&v, e[i].data, sizeof v); EQ(v, k); k++;
    }
    EQ(k, 5);
    tk_check_time_order(e, n);
    return 0;
}
