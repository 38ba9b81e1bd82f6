/* shall: posix_stream_overrun_status is POSIX_TRACE_NO_OVERRUN at creation, POSIX_TRACE_OVERRUN after a loss, and reset after each read by posix_trace_get_status.
 * where: §2.11.1.2 posix_stream_overrun_status; posix_trace_get_status(), DESCRIPTION
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
    EQ(tk_status(t).posix_stream_overrun_status, POSIX_TRACE_NO_OVERRUN);
    OK(posix_trace_eventid_open("overrun", &id));
    OK(posix_trace_start(t));
    for (int i = 0; i < 100; i++) posix_trace_event(id, &i, sizeof i);
    EQ(tk_status(t).posix_stream_overrun_status, POSIX_TRACE_OVERRUN);
    EQ(tk_status(t).posix_stream_overrun_status, POSIX_TRACE_NO_OVERRUN);
    OK(posix_trace_shutdown(t));
    return 0;
}
