/* shall: posix_log_overrun_status of an active stream is POSIX_TRACE_NO_OVERRUN at creation, POSIX_TRACE_OVERRUN once the log lost events, and reset after each read.
 * where: §2.11.1.2 posix_log_overrun_status; posix_trace_get_status(), DESCRIPTION
 * option: TRL
 */
#include "conformance.h"

int main(void) {
    trace_attr_t a; trace_id_t t; trace_event_id_t id;
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_setlogfullpolicy(&a, POSIX_TRACE_UNTIL_FULL));
    OK(posix_trace_attr_setlogsize(&a, 64 << 10));
    OK(posix_trace_create_withlog(0, &a, tk_log_fd("logovr.log"), &t));
    EQ(tk_status(t).posix_log_overrun_status, POSIX_TRACE_NO_OVERRUN);
    OK(posix_trace_eventid_open("logovr", &id));
    OK(posix_trace_start(t));
    for (int i = 0; i < 20000; i++) posix_trace_event(id, &i, sizeof i);
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
    EQ(st.posix_log_overrun_status, POSIX_TRACE_OVERRUN);
    EQ(st.posix_log_full_status, POSIX_TRACE_FULL);
    st = tk_status(t);
    EQ(st.posix_log_overrun_status, POSIX_TRACE_NO_OVERRUN);
    EQ(st.posix_log_full_status, POSIX_TRACE_FULL);
    OK(posix_trace_shutdown(t));
    return 0;
}
