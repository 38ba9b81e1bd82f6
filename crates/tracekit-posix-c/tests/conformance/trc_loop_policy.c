/* shall: A full POSIX_TRACE_LOOP stream goes on recording over its oldest events (RUNNING and FULL, overrun set); the reader gets the newest events, the loss marked by POSIX_TRACE_OVERFLOW then POSIX_TRACE_RESUME before the first event after it.
 * where: §2.11.1.2 posix_stream_full_status, overrun; posix_trace_attr_setstreamfullpolicy() (POSIX_TRACE_LOOP); §2.11.2.1 POSIX_TRACE_OVERFLOW/RESUME
 * option: TRC
 * deviation: The OVERFLOW event carries the time of the first event after the loss (the time of the first lost event is overwritten with it).
 */
#include "conformance.h"

int main(void) {
    trace_attr_t a; trace_id_t t; trace_event_id_t id; size_t ev; tk_event e[4096];
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_setstreamfullpolicy(&a, POSIX_TRACE_LOOP));
    OK(posix_trace_attr_getmaxusereventsize(&a, sizeof(int), &ev));
    OK(posix_trace_attr_setstreamsize(&a, 16 * ev));
    OK(posix_trace_create(0, &a, &t));
    OK(posix_trace_eventid_open("looped", &id));
    OK(posix_trace_start(t));
    for (int i = 0; i < 1000; i++) posix_trace_event(id, &i, sizeof i);
    struct posix_trace_status_info st = tk_status(t);
    EQ(st.posix_stream_status, POSIX_TRACE_RUNNING);
    EQ(st.posix_stream_full_status, POSIX_TRACE_FULL);
    EQ(st.posix_stream_overrun_status, POSIX_TRACE_OVERRUN);
    int n = tk_read(t, 1, e, 4096);
    EQ(e[0].id, POSIX_TRACE_START);
    EQ(e[1].id, POSIX_TRACE_OVERFLOW);
    EQ(e[2].id, POSIX_TRACE_RESUME);
    int v[1000]; int k = tk_ints(e, n, id, v, 1000);
    CHECK(k >= 16 && k < 1000);
    EQ(v[k - 1], 999);
    for (int i = 1; i < k; i++) EQ(v[i], v[i - 1] + 1);
    tk_check_time_order(e, n);
    OK(posix_trace_shutdown(t));
    return 0;
}
