/* shall: A POSIX_TRACE_UNTIL_FULL stream stops by itself when full (SUSPENDED and FULL, overrun set for the events that came while full); the reader gets POSIX_TRACE_STOP with auto != 0 after the last recorded event.
 * where: posix_trace_attr_setstreamfullpolicy() (POSIX_TRACE_UNTIL_FULL); §2.11.1.2 status combinations; §2.11.2.1 POSIX_TRACE_STOP
 * option: TRC
 */
#include "conformance.h"

int main(void) {
    trace_attr_t a; trace_id_t t; trace_event_id_t id; size_t ev; tk_event e[256]; int v;
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_setstreamfullpolicy(&a, POSIX_TRACE_UNTIL_FULL));
    OK(posix_trace_attr_getmaxusereventsize(&a, sizeof(int), &ev));
    OK(posix_trace_attr_setstreamsize(&a, 16 * ev));
    OK(posix_trace_create(0, &a, &t));
    OK(posix_trace_eventid_open("untilfull", &id));
    OK(posix_trace_start(t));
    for (int i = 0; i < 100; i++) posix_trace_event(id, &i, sizeof i);
    struct posix_trace_status_info st = tk_status(t);
    EQ(st.posix_stream_status, POSIX_TRACE_SUSPENDED);
    EQ(st.posix_stream_full_status, POSIX_TRACE_FULL);
    EQ(st.posix_stream_overrun_status, POSIX_TRACE_OVERRUN);
    int n = tk_read(t, 1, e, 256);
    int stop = tk_index(e, n, POSIX_TRACE_STOP); CHECK(stop > 0);
    int k = 0; for (int i = 0; i < stop; i++) k += e[i].id == id;
    CHECK(k >= 16);
    for (int i = stop + 1; i < n; i++) CHECK(e[i].id != id);
    memcpy(&v, e[stop].data, sizeof v); CHECK(v != 0);
    tk_check_sequence(e, stop, id, k);
    tk_check_time_order(e, n);
    OK(posix_trace_shutdown(t));
    return 0;
}
