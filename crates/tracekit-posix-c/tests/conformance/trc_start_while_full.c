/* shall: posix_trace_start on a full stream that stopped itself records nothing and leaves the status unchanged.
 * where: posix_trace_start(), DESCRIPTION
 * option: TRC
 */
#include "conformance.h"

int main(void) {
    trace_attr_t a; trace_id_t t; trace_event_id_t id; size_t ev;
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_setstreamfullpolicy(&a, POSIX_TRACE_UNTIL_FULL));
    OK(posix_trace_attr_getmaxusereventsize(&a, sizeof(int), &ev));
    OK(posix_trace_attr_setstreamsize(&a, 16 * ev));
    OK(posix_trace_create(0, &a, &t));
    OK(posix_trace_eventid_open("full", &id));
    OK(posix_trace_start(t));
    for (int i = 0; i < 100; i++) posix_trace_event(id, &i, sizeof i);
    OK(posix_trace_start(t));
    struct posix_trace_status_info st = tk_status(t);
    EQ(st.posix_stream_status, POSIX_TRACE_SUSPENDED);
    EQ(st.posix_stream_full_status, POSIX_TRACE_FULL);
    tk_event e[256]; int n = tk_read(t, 1, e, 256);
    EQ(tk_count(e, n, POSIX_TRACE_START), 2); /* the first start, the restart after the drain */
    EQ(e[0].id, POSIX_TRACE_START);
    OK(posix_trace_shutdown(t));
    return 0;
}
