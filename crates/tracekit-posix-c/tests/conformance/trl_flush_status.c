/* shall: posix_trace_flush starts a flush and returns; posix_stream_flush_status is POSIX_TRACE_FLUSHING while it runs and POSIX_TRACE_NOT_FLUSHING once done, and the flushed events are in the log.
 * where: posix_trace_flush(), DESCRIPTION; §2.11.1.2 posix_stream_flush_status
 * option: TRL
 */
#include "conformance.h"

int main(void) {
    trace_id_t t; trace_event_id_t id; tk_event *e = malloc(2000 * sizeof *e);
    OK(posix_trace_create_withlog(0, NULL, tk_log_fd("flush.log"), &t));
    EQ(tk_status(t).posix_stream_flush_status, POSIX_TRACE_NOT_FLUSHING);
    OK(posix_trace_eventid_open("flushed", &id));
    OK(posix_trace_start(t));
    for (int i = 0; i < 1000; i++) posix_trace_event(id, &i, sizeof i);
    OK(posix_trace_flush(t));
    int spins = 0;
    while (tk_status(t).posix_stream_flush_status == POSIX_TRACE_FLUSHING) { usleep(1000); CHECK(++spins < 10000); }
    OK(posix_trace_shutdown(t));
    int n = tk_read_log("flush.log", e, 2000, NULL);
    tk_check_sequence(e, n, id, 1000);
    return 0;
}
