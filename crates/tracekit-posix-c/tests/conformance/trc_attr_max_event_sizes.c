/* shall: The maximum sizes are the true worst case of one record: a stream of stream-min-size equal to the sum of the maxima of a set of events holds all of them without loss.
 * where: posix_trace_attr_getmaxusereventsize()/getmaxsystemeventsize(), DESCRIPTION and RATIONALE
 * option: TRC
 */
#include "conformance.h"

int main(void) {
    trace_attr_t a; size_t ev, sys; trace_id_t t; trace_event_id_t id; tk_event *e = malloc(200 * sizeof *e);
    char payload[48] = {0};
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_setmaxdatasize(&a, sizeof payload));
    OK(posix_trace_attr_getmaxusereventsize(&a, sizeof payload, &ev)); CHECK(ev >= sizeof payload);
    OK(posix_trace_attr_getmaxsystemeventsize(&a, &sys)); CHECK(sys > 0);
    OK(posix_trace_attr_setstreamfullpolicy(&a, POSIX_TRACE_UNTIL_FULL));
    /* Room for 100 user events and the START system event. */
    OK(posix_trace_attr_setstreamsize(&a, 100 * ev + sys));
    OK(posix_trace_create(0, &a, &t));
    OK(posix_trace_eventid_open("sized", &id));
    OK(posix_trace_start(t));
    for (int i = 0; i < 100; i++) { memcpy(payload, &i, sizeof i); posix_trace_event(id, payload, sizeof payload); }
    struct posix_trace_status_info st = tk_status(t);
    EQ(st.posix_stream_overrun_status, POSIX_TRACE_NO_OVERRUN);
    EQ(st.posix_stream_status, POSIX_TRACE_RUNNING);
    int n = tk_read(t, 1, e, 200);
    tk_check_sequence(e, n, id, 100);
    OK(posix_trace_shutdown(t));
    return 0;
}
