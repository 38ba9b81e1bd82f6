/* shall: posix_trace_clear of a stream with log reinitialises the log too: the first event of the log is the first one recorded after the clear, and the log is not full.
 * where: posix_trace_clear(), DESCRIPTION (with log)
 * option: TRL
 */
#include "conformance.h"

int main(void) {
    trace_id_t t; trace_event_id_t before, after; tk_event e[4096];
    OK(posix_trace_create_withlog(0, NULL, tk_log_fd("clear.log"), &t));
    OK(posix_trace_eventid_open("before-clear", &before));
    OK(posix_trace_eventid_open("after-clear", &after));
    OK(posix_trace_start(t));
    for (int i = 0; i < 1000; i++) posix_trace_event(before, &i, sizeof i);
    OK(posix_trace_flush(t));
    while (tk_status(t).posix_stream_flush_status == POSIX_TRACE_FLUSHING) usleep(1000);
    for (int i = 1000; i < 1100; i++) posix_trace_event(before, &i, sizeof i);
    OK(posix_trace_clear(t));
    EQ(tk_status(t).posix_log_full_status, POSIX_TRACE_NOT_FULL);
    EQ(tk_status(t).posix_stream_status, POSIX_TRACE_RUNNING);
    for (int i = 0; i < 10; i++) posix_trace_event(after, &i, sizeof i);
    OK(posix_trace_shutdown(t));
    int n = tk_read_log("clear.log", e, 4096, NULL);
    EQ(tk_count(e, n, before), 0);
    EQ(e[0].id, after);
    tk_check_sequence(e, n, after, 10);
    return 0;
}
