/* shall: POSIX_TRACE_START carries the filter in force when the stream started.
 * where: §2.11.2.1 POSIX_TRACE_START (data with Trace Event Filter)
 * option: TEF
 */
#include "conformance.h"

int main(void) {
    trace_id_t t; trace_event_set_t s; trace_event_id_t a; tk_event e[8];
    OK(posix_trace_create(0, NULL, &t));
    OK(posix_trace_eventid_open("start-filter", &a));
    OK(posix_trace_eventset_empty(&s)); OK(posix_trace_eventset_add(a, &s));
    OK(posix_trace_set_filter(t, &s, POSIX_TRACE_SET_EVENTSET));
    OK(posix_trace_start(t));
    int n = tk_read(t, 1, e, 8);
    EQ(n, 1); EQ(e[0].id, POSIX_TRACE_START);
    EQ(e[0].len, sizeof s); CHECK(memcmp(e[0].data, &s, sizeof s) == 0);
    OK(posix_trace_shutdown(t));
    return 0;
}
