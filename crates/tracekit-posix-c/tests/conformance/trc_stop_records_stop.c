/* shall: posix_trace_stop suspends a running stream and records POSIX_TRACE_STOP with auto = 0; events traced while suspended are not recorded; on a suspended stream it records nothing.
 * where: posix_trace_stop(), DESCRIPTION; §2.11.2.1 system trace event types (POSIX_TRACE_STOP)
 * option: TRC
 */
#include "conformance.h"

int main(void) {
    trace_id_t t; tk_event e[8]; trace_event_id_t id; int v;
    OK(posix_trace_create(0, NULL, &t));
    OK(posix_trace_eventid_open("stopped", &id));
    OK(posix_trace_start(t));
    OK(posix_trace_stop(t));
    EQ(tk_status(t).posix_stream_status, POSIX_TRACE_SUSPENDED);
    posix_trace_event(id, "x", 1);
    OK(posix_trace_stop(t));
    int n = tk_read(t, 1, e, 8);
    EQ(n, 2);
    EQ(e[0].id, POSIX_TRACE_START);
    EQ(e[1].id, POSIX_TRACE_STOP);
    CHECK(e[1].len >= sizeof v); memcpy(&v, e[1].data, sizeof v); EQ(v, 0);
    OK(posix_trace_shutdown(t));
    return 0;
}
