/* shall: For a stream created without log, posix_log_overrun_status is POSIX_TRACE_NO_OVERRUN and posix_log_full_status POSIX_TRACE_NOT_FULL, also after the stream lost events.
 * where: §2.11.1.2 posix_log_overrun_status, posix_log_full_status
 * option: TRL
 */
#include "conformance.h"

int main(void) {
    trace_attr_t a; trace_id_t t; trace_event_id_t id;
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_setstreamsize(&a, 4096));
    OK(posix_trace_create(0, &a, &t));
    OK(posix_trace_eventid_open("nolog", &id));
    OK(posix_trace_start(t));
    for (int i = 0; i < 1000; i++) posix_trace_event(id, &i, sizeof i);
    struct posix_trace_status_info st = tk_status(t);
    EQ(st.posix_stream_overrun_status, POSIX_TRACE_OVERRUN);
    EQ(st.posix_log_overrun_status, POSIX_TRACE_NO_OVERRUN);
    EQ(st.posix_log_full_status, POSIX_TRACE_NOT_FULL);
    EQ(st.posix_stream_flush_status, POSIX_TRACE_NOT_FLUSHING);
    OK(posix_trace_shutdown(t));
    return 0;
}
