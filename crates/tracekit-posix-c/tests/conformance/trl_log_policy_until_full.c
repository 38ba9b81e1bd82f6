/* shall: Under log-full-policy POSIX_TRACE_UNTIL_FULL a full log keeps what it holds and takes nothing more: a contiguous prefix of the events, then POSIX_TRACE_STOP as its last event; the log is FULL and overrun is set.
 * where: posix_trace_attr_setlogfullpolicy() (POSIX_TRACE_UNTIL_FULL); §2.11.2.1 POSIX_TRACE_STOP
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
    trace_event_id_t id; tk_event *e = malloc(2 * N * sizeof *e); trace_id_t lt; int v;
    trace_id_t t = record("untilfull.log", POSIX_TRACE_UNTIL_FULL, 256 << 10, N, &id);
    OK(posix_trace_shutdown(t));
    int n = tk_read_log("untilfull.log", e, 2 * N, &lt);
    int k = tk_count(e, n, id);
    CHECK(k > 1000 && k < N);
    tk_check_sequence(e, n, id, k);
    tk_check_time_order(e, n);
    EQ(e[n - 1].id, POSIX_TRACE_STOP);
    memcpy(&v, e[n - 1].data, sizeof v); CHECK(v != 0);
    EQ(e[0].id, POSIX_TRACE_START);
    struct posix_trace_status_info st = tk_status(lt);
    EQ(st.posix_log_full_status, POSIX_TRACE_FULL);
    EQ(st.posix_log_overrun_status, POSIX_TRACE_OVERRUN);
    return 0;
}
