/* shall: Changing the filter of a running stream records POSIX_TRACE_FILTER carrying the old and the new filter; changing it while the stream is suspended records nothing.
 * where: posix_trace_set_filter(), DESCRIPTION; §2.11.2.1 POSIX_TRACE_FILTER
 * option: TEF
 */
#include "conformance.h"

int main(void) {
    trace_id_t t; trace_event_set_t empty, s; trace_event_id_t a; tk_event e[16];
    OK(posix_trace_create(0, NULL, &t));
    OK(posix_trace_eventid_open("filter-a", &a));
    OK(posix_trace_eventset_empty(&empty));
    OK(posix_trace_eventset_empty(&s)); OK(posix_trace_eventset_add(a, &s));
    OK(posix_trace_set_filter(t, &s, POSIX_TRACE_SET_EVENTSET)); /* suspended: nothing */
    OK(posix_trace_start(t));
    OK(posix_trace_set_filter(t, &empty, POSIX_TRACE_SET_EVENTSET)); /* running: FILTER */
    int n = tk_read(t, 1, e, 16);
    EQ(n, 2); EQ(e[0].id, POSIX_TRACE_START); EQ(e[1].id, POSIX_TRACE_FILTER);
    EQ(e[1].len, 2 * sizeof(trace_event_set_t));
    CHECK(memcmp(e[1].data, &s, sizeof s) == 0);
    CHECK(memcmp(e[1].data + sizeof s, &empty, sizeof empty) == 0);
    OK(posix_trace_shutdown(t));
    return 0;
}
