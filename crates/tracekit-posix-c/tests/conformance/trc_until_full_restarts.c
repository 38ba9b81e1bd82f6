/* shall: Once a POSIX_TRACE_UNTIL_FULL stream that stopped itself is read empty it records again (RUNNING, NOT_FULL), and POSIX_TRACE_START is reported before the next events.
 * where: posix_trace_attr_setstreamfullpolicy() (POSIX_TRACE_UNTIL_FULL); §2.11.2.1 POSIX_TRACE_START
 * option: TRC
 * deviation: The stream restarts once read empty (the standard allows sooner).
 */
#include "conformance.h"

int main(void) {
    trace_attr_t a; trace_id_t t; trace_event_id_t id; size_t ev; tk_event e[256];
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_setstreamfullpolicy(&a, POSIX_TRACE_UNTIL_FULL));
    OK(posix_trace_attr_getmaxusereventsize(&a, sizeof(int), &ev));
    OK(posix_trace_attr_setstreamsize(&a, 16 * ev));
    OK(posix_trace_create(0, &a, &t));
    OK(posix_trace_eventid_open("restart", &id));
    OK(posix_trace_start(t));
    for (int i = 0; i < 100; i++) posix_trace_event(id, &i, sizeof i);
    int n = tk_read(t, 1, e, 256);
    CHECK(n >= 3);
    EQ(e[n - 2].id, POSIX_TRACE_STOP);
    EQ(e[n - 1].id, POSIX_TRACE_START);
    struct posix_trace_status_info st = tk_status(t);
    EQ(st.posix_stream_status, POSIX_TRACE_RUNNING);
    EQ(st.posix_stream_full_status, POSIX_TRACE_NOT_FULL);
    int x = 4242; posix_trace_event(id, &x, sizeof x);
    n = tk_read(t, 1, e, 256);
    EQ(n, 1); EQ(e[0].id, id);
    OK(posix_trace_shutdown(t));
    return 0;
}
