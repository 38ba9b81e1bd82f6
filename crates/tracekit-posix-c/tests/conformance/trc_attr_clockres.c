/* shall: posix_trace_attr_getclockres returns the resolution of the clock that stamps events; event timestamps are that clock's time of the event.
 * where: posix_trace_attr_getclockres(), DESCRIPTION; §2.11.1.3 posix_timestamp
 * option: TRC
 */
#include "conformance.h"

int main(void) {
    trace_attr_t a; trace_id_t t; struct timespec res; trace_event_id_t id; tk_event e[8];
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_create(0, &a, &t));
    OK(posix_trace_get_attr(t, &a));
    OK(posix_trace_attr_getclockres(&a, &res));
    CHECK(tk_ns(res) > 0 && tk_ns(res) <= 1000000);
    OK(posix_trace_eventid_open("clock", &id));
    OK(posix_trace_start(t));
    long long before = tk_now();
    posix_trace_event(id, NULL, 0);
    long long after = tk_now();
    int n = tk_read(t, 1, e, 8);
    int i = tk_index(e, n, id); CHECK(i >= 0);
    /* Within a millisecond of the real clock around the call. */
    CHECK(e[i].ts >= before - 1000000 && e[i].ts <= after + 1000000);
    OK(posix_trace_shutdown(t));
    return 0;
}
