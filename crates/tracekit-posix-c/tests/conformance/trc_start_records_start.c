/* shall: posix_trace_start puts a suspended stream in the running state and records POSIX_TRACE_START; on a running stream it records nothing and changes nothing.
 * where: posix_trace_start(), DESCRIPTION; §2.11.2.1 system trace event types (POSIX_TRACE_START)
 * option: TRC
 */
#include "conformance.h"

int main(void) {
    trace_id_t t; tk_event e[8];
    OK(posix_trace_create(0, NULL, &t));
    OK(posix_trace_start(t));
    EQ(tk_status(t).posix_stream_status, POSIX_TRACE_RUNNING);
    OK(posix_trace_start(t));
    EQ(tk_status(t).posix_stream_status, POSIX_TRACE_RUNNING);
    int n = tk_read(t, 1, e, 8);
    EQ(n, 1);
    EQ(e[0].id, POSIX_TRACE_START);
    OK(posix_trace_shutdown(t));
    return 0;
}
