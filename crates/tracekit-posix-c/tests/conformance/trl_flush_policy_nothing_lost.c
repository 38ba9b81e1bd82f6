/* shall: A full POSIX_TRACE_FLUSH stream is flushed to its log as if by posix_trace_flush: written far faster than the log drains, no event is lost (no overrun), every flush stands as a FLUSH_START/FLUSH_STOP pair in time order.
 * where: posix_trace_attr_setstreamfullpolicy() (POSIX_TRACE_FLUSH); §2.11.1.2 overrun
 * option: TRL
 * deviation: A writer that finds the stream full waits for the flush to free room (a futex wait: the only system call of posix_trace_event), up to 2 s without progress, after which the event is counted lost.
 */
#include "conformance.h"

#define N 3000
int main(void) {
    trace_attr_t a; trace_id_t t; trace_event_id_t id; size_t ev; char payload[32] = {0};
    tk_event *e = malloc(8 * N * sizeof *e);
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_setstreamfullpolicy(&a, POSIX_TRACE_FLUSH));
    OK(posix_trace_attr_setlogfullpolicy(&a, POSIX_TRACE_APPEND));
    OK(posix_trace_attr_getmaxusereventsize(&a, sizeof payload, &ev));
    OK(posix_trace_attr_setstreamsize(&a, 16 * ev));
    OK(posix_trace_create_withlog(0, &a, tk_log_fd("fast.log"), &t));
    OK(posix_trace_eventid_open("fast", &id));
    OK(posix_trace_start(t));
    for (int i = 0; i < N; i++) { memcpy(payload, &i, sizeof i); posix_trace_event(id, payload, sizeof payload); }
    struct posix_trace_status_info st = tk_status(t);
    EQ(st.posix_stream_overrun_status, POSIX_TRACE_NO_OVERRUN);
    OK(posix_trace_shutdown(t));
    trace_id_t lt;
    int n = tk_read_log("fast.log", e, 8 * N, &lt);
    tk_check_sequence(e, n, id, N);
    tk_check_time_order(e, n);
    int depth = 0, pairs = 0;
    for (int i = 0; i < n; i++) {
        if (e[i].id == POSIX_TRACE_FLUSH_START) { EQ(depth, 0); depth = 1; }
        if (e[i].id == POSIX_TRACE_FLUSH_STOP) { EQ(depth, 1); depth = 0; pairs++; }
    }
    EQ(depth, 0);
    CHECK(pairs > 1); /* the stream filled up and was flushed more than once */
    st = tk_status(lt);
    EQ(st.posix_stream_overrun_status, POSIX_TRACE_NO_OVERRUN);
    EQ(st.posix_log_overrun_status, POSIX_TRACE_NO_OVERRUN);
    OK(posix_trace_close(lt));
    return 0;
}
