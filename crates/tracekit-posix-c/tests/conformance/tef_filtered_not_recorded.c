/* shall: An event whose type is in the stream's filter is not recorded; the others are.
 * where: posix_trace_event(), DESCRIPTION; §2.11 (filtering)
 * option: TEF
 */
#include "conformance.h"

int main(void) {
    trace_id_t t; trace_event_set_t s; trace_event_id_t keep, drop; tk_event e[16];
    OK(posix_trace_create(0, NULL, &t));
    OK(posix_trace_eventid_open("keep", &keep));
    OK(posix_trace_eventid_open("drop", &drop));
    OK(posix_trace_eventset_empty(&s)); OK(posix_trace_eventset_add(drop, &s));
    OK(posix_trace_set_filter(t, &s, POSIX_TRACE_SET_EVENTSET));
    OK(posix_trace_start(t));
    for (int i = 0; i < 3; i++) { posix_trace_event(keep, &i, sizeof i); posix_trace_event(drop, &i, sizeof i); }
    int n = tk_read(t, 1, e, 16);
    EQ(tk_count(e, n, keep), 3); EQ(tk_count(e, n, drop), 0);
    EQ(tk_status(t).posix_stream_overrun_status, POSIX_TRACE_NO_OVERRUN);
    OK(posix_trace_shutdown(t));
    return 0;
}
