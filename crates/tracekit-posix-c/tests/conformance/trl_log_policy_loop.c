/* shall: Under log-full-policy POSIX_TRACE_LOOP a full log goes on with its newest events, the oldest overwritten: the log ends with the last events recorded, contiguous and in time order; the log is FULL and overrun is set (reset on read for the active stream).
 * where: posix_trace_attr_setlogfullpolicy() (POSIX_TRACE_LOOP); §2.11.1.2 posix_log_full_status, posix_log_overrun_status
 * option: TRL
 * deviation: The log is overwritten a block at a time (blocks of log-max-size / 16, 4 to 64 KiB), so it keeps between log-max-size minus one block and log-max-size of the newest events.
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
    trace_id_t t = record("loop.log", POSIX_TRACE_LOOP, 256 << 10, N, &id);
    OK(posix_trace_flush(t));
    /* Every read resets the overrun members: keep what the polls saw. */
    int log_overrun = POSIX_TRACE_NO_OVERRUN;
    struct posix_trace_status_info st;
    do {
        usleep(1000);
        st = tk_status(t);
        if (st.posix_log_overrun_status == POSIX_TRACE_OVERRUN) log_overrun = POSIX_TRACE_OVERRUN;
    } while (st.posix_stream_flush_status == POSIX_TRACE_FLUSHING);
    st.posix_log_overrun_status = log_overrun;
    EQ(st.posix_log_full_status, POSIX_TRACE_FULL);
    EQ(st.posix_log_overrun_status, POSIX_TRACE_OVERRUN);
    EQ(tk_status(t).posix_log_overrun_status, POSIX_TRACE_NO_OVERRUN);
    OK(posix_trace_shutdown(t));
    int n = tk_read_log("loop.log", e, 2 * N, &lt);
    int *v = malloc(N * sizeof *v); int k = tk_ints(e, n, id, v, N);
    CHECK(k > 1000 && k < N);
    EQ(v[k - 1], N - 1);
    for (int i = 1; i < k; i++) EQ(v[i], v[i - 1] + 1);
    tk_check_time_order(e, n);
    st = tk_status(lt);
    EQ(st.posix_log_full_status, POSIX_TRACE_FULL);
    EQ(st.posix_log_overrun_status, POSIX_TRACE_OVERRUN);
    return 0;
}
