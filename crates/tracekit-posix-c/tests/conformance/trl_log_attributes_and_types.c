/* shall: posix_trace_get_attr on an opened log returns the attributes of the recorded stream, and the event type list of the log holds the system types and the user types it recorded.
 * where: posix_trace_get_attr(), posix_trace_eventtypelist_getnext_id(), DESCRIPTION (pre-recorded stream)
 * option: TRL
 */
#include "conformance.h"

int main(void) {
    trace_attr_t a, got; trace_id_t t, lt; trace_event_id_t x, y, it; tk_event e[64]; int pol, un, sx = 0, sy = 0, ss = 0;
    size_t sz; struct timespec ct;
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_setlogfullpolicy(&a, POSIX_TRACE_APPEND));
    OK(posix_trace_attr_setmaxdatasize(&a, 64));
    OK(posix_trace_create_withlog(0, &a, tk_log_fd("attrs.log"), &t));
    OK(posix_trace_eventid_open("type-x", &x));
    OK(posix_trace_eventid_open("type-y", &y));
    OK(posix_trace_shutdown(t));
    tk_read_log("attrs.log", e, 64, &lt);
    OK(posix_trace_attr_init(&got)); OK(posix_trace_get_attr(lt, &got));
    OK(posix_trace_attr_getlogfullpolicy(&got, &pol)); EQ(pol, POSIX_TRACE_APPEND);
    OK(posix_trace_attr_getstreamfullpolicy(&got, &pol)); EQ(pol, POSIX_TRACE_FLUSH);
    OK(posix_trace_attr_getmaxdatasize(&got, &sz)); EQ(sz, 64);
    OK(posix_trace_attr_getcreatetime(&got, &ct)); CHECK(ct.tv_sec > 0);
    for (;;) {
        OK(posix_trace_eventtypelist_getnext_id(lt, &it, &un));
        if (un) break;
        sx += it == x; sy += it == y; ss += it == POSIX_TRACE_STOP;
    }
    EQ(sx, 1); EQ(sy, 1); EQ(ss, 1);
    OK(posix_trace_close(lt));
    return 0;
}
