/* shall: posix_trace_get_status on an opened log returns the final status of the stream that was recorded, and reading it resets nothing.
 * where: posix_trace_get_status(), DESCRIPTION (pre-recorded stream)
 * option: TRL
 */
#include "conformance.h"

int main(void) {
    trace_attr_t a; trace_id_t t, lt; trace_event_id_t id; tk_event e[4096];
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_setstreamfullpolicy(&a, POSIX_TRACE_LOOP));
    OK(posix_trace_attr_setstreamsize(&a, 4096));
    OK(posix_trace_create_withlog(0, &a, tk_log_fd("final.log"), &t));
    OK(posix_trace_eventid_open("final", &id));
    OK(posix_trace_start(t));
    for (int i = 0; i < 3000; i++) posix_trace_event(id, &i, sizeof i);
    OK(posix_trace_shutdown(t));
    tk_read_log("final.log", e, 4096, &lt);
    struct posix_trace_status_info s1 = tk_status(lt), s2 = tk_status(lt);
    EQ(s1.posix_stream_overrun_status, POSIX_TRACE_OVERRUN);
    EQ(s2.posix_stream_overrun_status, POSIX_TRACE_OVERRUN);
    EQ(s1.posix_stream_status, POSIX_TRACE_SUSPENDED);
    OK(posix_trace_close(lt));
    return 0;
}
