/* shall: The child of a process traced into a POSIX_TRACE_INHERITED stream is traced into that stream (its events carry its pid) and inherits the parent's name-to-id mapping.
 * where: fork(), DESCRIPTION (Trace and Trace Inherit options)
 * option: TRI
 */
#include "conformance.h"

static trace_event_id_t id;
static void child(void *arg) {
    (void)arg; trace_event_id_t again;
    posix_trace_event(id, "child", 5); /* the parent's id, without eventid_open */
    if (posix_trace_eventid_open("forked", &again) != 0 || again != id) _exit(2);
}
int main(void) {
    tk_event e[32]; char name[TRACE_EVENT_NAME_MAX + 1];
    trace_id_t t = tk_inherited_stream(POSIX_TRACE_INHERITED, NULL);
    OK(posix_trace_eventid_open("forked", &id));
    posix_trace_event(id, "parent", 6);
    pid_t me = getpid();
    EQ(tk_in_child(child, NULL), 0);
    int n = tk_read(t, 1, e, 32), parents = 0, children = 0;
    for (int i = 0; i < n; i++) {
        if (e[i].id != id) continue;
        if (e[i].pid == me) { parents++; CHECK(e[i].len == 6); }
        else { children++; CHECK(e[i].len == 5 && memcmp(e[i].data, "child", 5) == 0); }
    }
    EQ(parents, 1); EQ(children, 1);
    OK(posix_trace_eventid_get_name(t, id, name)); CHECK(strcmp(name, "forked") == 0);
    OK(posix_trace_shutdown(t));
    return 0;
}
