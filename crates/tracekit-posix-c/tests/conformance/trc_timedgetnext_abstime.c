/* shall: With no event ready, an abstime whose tv_nsec is outside 0..999999999 fails with EINVAL; with an event ready the event is returned without looking at abstime.
 * where: posix_trace_timedgetnext_event(), DESCRIPTION and ERRORS (EINVAL)
 * option: TRC
 */
#include "conformance.h"

int main(void) {
    trace_id_t t; struct posix_trace_event_info ev; char buf[16]; size_t len; int un;
    struct timespec bad = { .tv_sec = 0, .tv_nsec = 2000000000L };
    OK(posix_trace_create(0, NULL, &t));
    ERR(posix_trace_timedgetnext_event(t, &ev, buf, sizeof buf, &len, &un, &bad), EINVAL);
    OK(posix_trace_start(t));
    OK(posix_trace_timedgetnext_event(t, &ev, buf, sizeof buf, &len, &un, &bad));
    EQ(un, 0); EQ(ev.posix_event_id, POSIX_TRACE_START);
    OK(posix_trace_shutdown(t));
    return 0;
}
