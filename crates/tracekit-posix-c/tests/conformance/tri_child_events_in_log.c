/* shall: Every event an inheriting child recorded before it ended (by exit, _exit or a signal) is in the parent's log, in time order with the parent's.
 * where: fork(), DESCRIPTION (Trace Inherit option); posix_trace_shutdown(), DESCRIPTION (with log)
 * option: TRI
 */
#include "conformance.h"

static trace_event_id_t id;
static void child(void *how) {
    for (int i = 0; i < 100; i++) { int v = 1000 + i; posix_trace_event(id, &v, sizeof v); }
    if (how == (void *)1) exit(0);
    if (how == (void *)2) raise(SIGKILL);
}
int main(void) {
    tk_event e[1024];
    trace_id_t t = tk_inherited_stream(POSIX_TRACE_INHERITED, "children.log");
    OK(posix_trace_eventid_open("family", &id));
    for (long how = 0; how < 3; how++) {
        int v = (int)how; posix_trace_event(id, &v, sizeof v);
        tk_in_child(child, (void *)how);
    }
    OK(posix_trace_shutdown(t));
    int n = tk_read_log("children.log", e, 1024, NULL);
    EQ(tk_count(e, n, id), 3 + 300);
    tk_check_time_order(e, n);
    pid_t me = getpid(); int parent = 0;
    for (int i = 0; i < n; i++) if (e[i].id == id && e[i].pid == me) {
        int v; memcpy(&v, e[i].data, sizeof v); EQ(v, parent); parent++;
    }
    EQ(parent, 3);
    return 0;
}
