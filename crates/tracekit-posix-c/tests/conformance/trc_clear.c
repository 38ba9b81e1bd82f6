/* shall: posix_trace_clear discards every recorded event and makes the stream not full, but keeps its running state and its event-name mapping.
 * where: posix_trace_clear(), DESCRIPTION
 * option: TRC
 */
#include "conformance.h"

int main(void) {
    trace_attr_t a; trace_id_t t; trace_event_id_t id; size_t ev; tk_event e[64]; char name[TRACE_EVENT_NAME_MAX + 1];
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_setstreamfullpolicy(&a, POSIX_TRACE_LOOP));
    OK(posix_trace_attr_getmaxusereventsize(&a, sizeof(int), &ev));
    OK(posix_trace_attr_setstreamsize(&a, 16 * ev));
    OK(posix_trace_create(0, &a, &t));
    OK(posix_trace_eventid_open("cleared", &id));
    OK(posix_trace_start(t));
    for (int i = 0; i < 100; i++) posix_trace_event(id, &i, sizeof i);
    EQ(tk_status(t).posix_stream_full_status, POSIX_TRACE_FULL);
    OK(posix_trace_clear(t));
    struct posix_trace_status_info st = tk_status(t);
    EQ(st.posix_stream_status, POSIX_TRACE_RUNNING);
    EQ(st.posix_stream_full_status, POSIX_TRACE_NOT_FULL);
    OK(posix_trace_eventid_get_name(t, id, name)); CHECK(strcmp(name, "cleared") == 0);
    int x = 7; posix_trace_event(id, &x, sizeof x);
    int n = tk_read(t, 1, e, 64);
    EQ(n, 1); EQ(e[0].id, id);
    OK(posix_trace_stop(t));
    OK(posix_trace_clear(t));
    st = tk_status(t);
    EQ(st.posix_stream_status, POSIX_TRACE_SUSPENDED);
    EQ(st.posix_stream_full_status, POSIX_TRACE_NOT_FULL);
    EQ(tk_read(t, 1, e, 64), 0);
    OK(posix_trace_shutdown(t));
    return 0;
}
