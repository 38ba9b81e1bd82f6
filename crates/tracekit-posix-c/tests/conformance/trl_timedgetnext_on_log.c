/* shall: posix_trace_timedgetnext_event on an opened log is unspecified by the standard.
 * where: posix_trace_timedgetnext_event(), DESCRIPTION (unspecified on a pre-recorded stream)
 * option: TRL
 * deviation: tracekit reads a log with posix_trace_timedgetnext_event as with posix_trace_getnext_event (never blocks, the deadline is not used).
 */
#include "conformance.h"

int main(void) {
    trace_id_t t, lt; trace_event_id_t id; tk_event e[16];
    struct posix_trace_event_info ev; char buf[8]; size_t len; int un;
    OK(posix_trace_create_withlog(0, NULL, tk_log_fd("timed.log"), &t));
    OK(posix_trace_eventid_open("timed", &id));
    OK(posix_trace_start(t));
    OK(posix_trace_shutdown(t));
    int n = tk_read_log("timed.log", e, 16, &lt);
    OK(posix_trace_rewind(lt));
    struct timespec dl = {0, 0};
    for (int i = 0; i < n; i++) {
        OK(posix_trace_timedgetnext_event(lt, &ev, buf, sizeof buf, &len, &un, &dl));
        EQ(un, 0); EQ(ev.posix_event_id, e[i].id);
    }
    OK(posix_trace_timedgetnext_event(lt, &ev, buf, sizeof buf, &len, &un, &dl)); CHECK(un);
    OK(posix_trace_close(lt));
    return 0;
}
