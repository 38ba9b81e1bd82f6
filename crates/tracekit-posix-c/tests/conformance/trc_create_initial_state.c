/* shall: A new stream is suspended (POSIX_TRACE_SUSPENDED), not full, with no overrun, and holds no event until started.
 * where: posix_trace_create(), DESCRIPTION; §2.11.1.2 posix_trace_status_info
 * option: TRC
 */
#include "conformance.h"

int main(void) {
    trace_id_t t; tk_event e[4]; trace_event_id_t id;
    OK(posix_trace_create(0, NULL, &t));
    OK(posix_trace_eventid_open("early", &id));
    posix_trace_event(id, "x", 1);
    struct posix_trace_status_info st = tk_status(t);
    EQ(st.posix_stream_status, POSIX_TRACE_SUSPENDED);
    EQ(st.posix_stream_full_status, POSIX_TRACE_NOT_FULL);
    EQ(st.posix_stream_overrun_status, POSIX_TRACE_NO_OVERRUN);
    EQ(tk_read(t, 1, e, 4), 0);
    OK(posix_trace_shutdown(t));
    return 0;
}
