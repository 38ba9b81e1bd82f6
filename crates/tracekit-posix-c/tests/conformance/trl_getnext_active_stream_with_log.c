/* shall: Reading an active stream that has a log is left open by the standard (create_withlog lists getnext, the getnext page limits it to streams without log).
 * where: posix_trace_getnext_event(), DESCRIPTION; posix_trace_create_withlog() (list of functions)
 * option: TRL
 * deviation: tracekit decides: the events of a stream with log go to the log (its flusher is the stream's one reader), so the getnext functions on it fail with EINVAL; read the log with posix_trace_open.
 */
#include "conformance.h"

int main(void) {
    trace_id_t t; struct posix_trace_event_info ev; char buf[8]; size_t len; int un;
    OK(posix_trace_create_withlog(0, NULL, tk_log_fd("active.log"), &t));
    OK(posix_trace_start(t));
    ERR(posix_trace_getnext_event(t, &ev, buf, sizeof buf, &len, &un), EINVAL);
    ERR(posix_trace_trygetnext_event(t, &ev, buf, sizeof buf, &len, &un), EINVAL);
    OK(posix_trace_shutdown(t));
    return 0;
}
