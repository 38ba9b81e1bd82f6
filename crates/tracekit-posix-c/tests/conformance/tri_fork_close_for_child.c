/* shall: The child of a process traced into a POSIX_TRACE_CLOSE_FOR_CHILD stream is not traced into it; the parent is.
 * where: fork(), DESCRIPTION (Trace and Trace Inherit options)
 * option: TRI
 */
#include "conformance.h"

static trace_event_id_t id;
static void child(void *arg) { (void)arg; for (int i = 0; i < 10; i++) posix_trace_event(id, "child", 5); }
int main(void) {
    tk_event e[32];
    trace_id_t t = tk_inherited_stream(POSIX_TRACE_CLOSE_FOR_CHILD, NULL);
    OK(posix_trace_eventid_open("not-inherited", &id));
    EQ(tk_in_child(child, NULL), 0);
    posix_trace_event(id, "parent", 6);
    int n = tk_read(t, 1, e, 32);
    EQ(tk_count(e, n, id), 1);
    int i = tk_index(e, n, id); EQ(e[i].pid, getpid());
    OK(posix_trace_shutdown(t));
    return 0;
}
