/* shall: posix_trace_getnext_event on an opened log returns its events oldest first, starting with the POSIX_TRACE_START that began the recording, every system event at its place in time.
 * where: posix_trace_open(), DESCRIPTION; posix_trace_getnext_event(), DESCRIPTION (pre-recorded stream)
 * option: TRL
 */
#include "conformance.h"

int main(void) {
    trace_id_t t; trace_event_id_t id; tk_event e[256]; trace_event_set_t s;
    OK(posix_trace_create_withlog(0, NULL, tk_log_fd("oldest.log"), &t));
    OK(posix_trace_eventid_open("oldest", &id));
    OK(posix_trace_start(t));
    int k = 0;
    for (; k < 5; k++) posix_trace_event(id, &k, sizeof k);
    OK(posix_trace_eventset_empty(&s)); OK(posix_trace_eventset_add(POSIX_TRACE_ERROR, &s));
    OK(posix_trace_set_filter(t, &s, POSIX_TRACE_SET_EVENTSET));
    for (; k < 10; k++) posix_trace_event(id, &k, sizeof k);
    OK(posix_trace_stop(t));
    OK(posix_trace_flush(t));
    while (tk_status(t).posix_stream_flush_status == POSIX_TRACE_FLUSHING) usleep(1000);
    OK(posix_trace_start(t));
    for (; k < 15; k++) posix_trace_event(id, &k, sizeof k);
    OK(posix_trace_shutdown(t));
    int n = tk_read_log("oldest.log", e, 256, NULL);
    tk_check_time_order(e, n);
    tk_check_sequence(e, n, id, 15);
    trace_event_id_t want[] = {POSIX_TRACE_START, id, id, id, id, id, POSIX_TRACE_FILTER, id, id, id, id, id,
        POSIX_TRACE_STOP, POSIX_TRACE_FLUSH_START, POSIX_TRACE_FLUSH_STOP, POSIX_TRACE_START, id, id, id, id, id,
        POSIX_TRACE_STOP, POSIX_TRACE_FLUSH_START, POSIX_TRACE_FLUSH_STOP};
    int w = sizeof want / sizeof want[0];
    EQ(n, w);
    for (int i = 0; i < n; i++) if (e[i].id != want[i]) FAIL("event %d is %u, expected %u", i, e[i].id, want[i]);
    return 0;
}
