/* shall: A new stream has an empty filter: every event type is recorded.
 * where: posix_trace_create(), DESCRIPTION (Trace Event Filter)
 * option: TEF
 */
#include "conformance.h"

int main(void) {
    trace_id_t t; trace_event_set_t s, empty; trace_event_id_t id; tk_event e[8];
    OK(posix_trace_create(0, NULL, &t));
    OK(posix_trace_get_filter(t, &s));
    OK(posix_trace_eventset_empty(&empty));
    CHECK(memcmp(&s, &empty, sizeof s) == 0);
    OK(posix_trace_eventid_open("unfiltered", &id));
    OK(posix_trace_start(t));
    posix_trace_event(id, NULL, 0);
    int n = tk_read(t, 1, e, 8);
    EQ(tk_count(e, n, id), 1);
    OK(posix_trace_shutdown(t));
    return 0;
}
