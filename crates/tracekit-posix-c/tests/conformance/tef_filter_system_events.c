/* shall: System event types can be filtered out too: a stream whose filter holds POSIX_TRACE_STOP records no STOP.
 * where: posix_trace_set_filter(), DESCRIPTION; §2.11.2.1 system trace event types
 * option: TEF
 */
#include "conformance.h"

int main(void) {
    trace_id_t t; trace_event_set_t s; tk_event e[8];
    OK(posix_trace_create(0, NULL, &t));
    OK(posix_trace_eventset_empty(&s)); OK(posix_trace_eventset_add(POSIX_TRACE_STOP, &s));
    OK(posix_trace_set_filter(t, &s, POSIX_TRACE_SET_EVENTSET));
    OK(posix_trace_start(t));
    OK(posix_trace_stop(t));
    int n = tk_read(t, 1, e, 8);
    EQ(n, 1); EQ(e[0].id, POSIX_TRACE_START);
    OK(posix_trace_shutdown(t));
    return 0;
}
