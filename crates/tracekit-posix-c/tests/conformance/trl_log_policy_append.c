/* shall: Under POSIX_TRACE_APPEND the log grows without limit, log-max-size ignored: a log given a size far below what is written holds every event.
 * where: posix_trace_attr_setlogfullpolicy() (POSIX_TRACE_APPEND); §2.11.1.2 posix_log_full_status
 * option: TRL
 */
#include "conformance.h"

/* A 64-event stream (POSIX_TRACE_FLUSH) writing N events into a log of
 * log-max-size many times the stream size, with the given log policy. */
static trace_id_t record(const char *name, int log_policy, size_t log_size, int n, trace_event_id_t *id) {
    trace_attr_t a; trace_id_t t; size_t ev; char payload[24] = {0};
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_setlogfullpolicy(&a, log_policy));
    OK(posix_trace_attr_getmaxusereventsize(&a, sizeof payload, &ev));
    OK(posix_trace_attr_setstreamsize(&a, 64 * ev));
    OK(posix_trace_attr_setlogsize(&a, log_size));
    OK(posix_trace_create_withlog(0, &a, tk_log_fd(name), &t));
    OK(posix_trace_eventid_open("policy", id));
    OK(posix_trace_start(t));
    for (int i = 0; i < n; i++) { memcpy(payload, &i, sizeof i); posix_trace_event(*id, payload, sizeof payload); }
    return t;
}

#define N 50000
int main(void) {
    trace_event_id_t id; tk_event *e = malloc(2 * N * sizeof *e); trace_id_t lt;
    trace_id_t t = record("append.log", POSIX_TRACE_APPEND, 64 << 10, N, &id);
    EQ(tk_status(t).posix_log_overrun_status, POSIX_TRACE_NO_OVERRUN);
    OK(posix_trace_shutdown(t));
    int n = tk_read_log("append.log", e, 2 * N, &lt);
    tk_check_sequence(e, n, id, N);
    tk_check_time_order(e, n);
    EQ(tk_status(lt).posix_log_overrun_status, POSIX_TRACE_NO_OVERRUN);
    return 0;
}
