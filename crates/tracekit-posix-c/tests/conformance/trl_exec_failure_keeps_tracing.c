/* shall: An exec that fails returns to the caller, whose streams are still its own: tracing goes on and the log, completed at shutdown, holds the events from before and after the failed call.
 * where: exec, DESCRIPTION and RETURN VALUE
 * option: TRL
 * deviation: Before the exec system call the log is completed (the stream stopped, STOP recorded); when the call fails the stream starts again, so the log shows a STOP/START pair around the failed exec.
 */
#include "conformance.h"

int main(void) {
    trace_id_t t; trace_event_id_t id; tk_event e[256];
    OK(posix_trace_create_withlog(0, NULL, tk_log_fd("failed.log"), &t));
    OK(posix_trace_eventid_open("around-exec", &id));
    OK(posix_trace_start(t));
    for (int i = 0; i < 10; i++) posix_trace_event(id, &i, sizeof i);
    CHECK(execl("/nonexistent/program", "x", (char *)NULL) == -1);
    EQ(errno, ENOENT);
    EQ(tk_status(t).posix_stream_status, POSIX_TRACE_RUNNING);
    for (int i = 10; i < 20; i++) posix_trace_event(id, &i, sizeof i);
    OK(posix_trace_shutdown(t));
    int n = tk_read_log("failed.log", e, 256, NULL);
    tk_check_sequence(e, n, id, 20);
    tk_check_time_order(e, n);
    return 0;
}
