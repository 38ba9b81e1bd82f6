/* shall: A flush is bracketed by POSIX_TRACE_FLUSH_START and POSIX_TRACE_FLUSH_STOP, which stand in the log in time order: after the last event recorded before the flush, before the first event recorded after it.
 * where: posix_trace_flush(), DESCRIPTION; §2.11.2.1 POSIX_TRACE_FLUSH_START/FLUSH_STOP
 * option: TRL
 */
#include "conformance.h"

int main(void) {
    trace_id_t t; trace_event_id_t id; tk_event e[64];
    OK(posix_trace_create_withlog(0, NULL, tk_log_fd("order.log"), &t));
    OK(posix_trace_eventid_open("around", &id));
    OK(posix_trace_start(t));
    for (int i = 0; i < 5; i++) posix_trace_event(id, &i, sizeof i);
    OK(posix_trace_flush(t));
    while (tk_status(t).posix_stream_flush_status == POSIX_TRACE_FLUSHING) usleep(1000);
    for (int i = 5; i < 10; i++) posix_trace_event(id, &i, sizeof i);
    OK(posix_trace_shutdown(t));
    int n = tk_read_log("order.log", e, 64, NULL);
    tk_check_time_order(e, n);
    tk_check_sequence(e, n, id, 10);
    EQ(e[0].id, POSIX_TRACE_START);
    int fs = tk_index(e, n, POSIX_TRACE_FLUSH_START), fe = tk_index(e, n, POSIX_TRACE_FLUSH_STOP);
    CHECK(fs > 0 && fe > fs);
    int v; memcpy(&v, e[fs - 1].data, sizeof v); EQ(e[fs - 1].id, id); EQ(v, 4);
    memcpy(&v, e[fe + 1].data, sizeof v); EQ(e[fe + 1].id, id); EQ(v, 5);
    EQ(tk_count(e, n, POSIX_TRACE_FLUSH_START), tk_count(e, n, POSIX_TRACE_FLUSH_STOP));
    return 0;
}
