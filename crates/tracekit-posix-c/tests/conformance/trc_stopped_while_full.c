/* shall: A stream stopped by posix_trace_stop while its resources are exhausted reports SUSPENDED and FULL.
 * where: §2.11.1.2 status combinations (SUSPENDED and FULL)
 * option: TRC
 */
#include "conformance.h"

int main(void) {
    trace_attr_t a; trace_id_t t; trace_event_id_t id; size_t ev;
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_setstreamfullpolicy(&a, POSIX_TRACE_LOOP));
    OK(posix_trace_attr_getmaxusereventsize(&a, sizeof(int), &ev));
    OK(posix_trace_attr_setstreamsize(&a, 16 * ev));
    OK(posix_trace_create(0, &a, &t));
    OK(posix_trace_eventid_open("stopfull", &id));
    OK(posix_trace_start(t));
    for (int i = 0; i < 100; i++) posix_trace_event(id, &i, sizeof i);
    OK(posix_trace_stop(t));
    struct posix_trace_status_info st = tk_status(t);
    EQ(st.posix_stream_status, POSIX_TRACE_SUSPENDED);
    EQ(st.posix_stream_full_status, POSIX_TRACE_FULL);
    OK(posix_trace_shutdown(t));
    return 0;
}
