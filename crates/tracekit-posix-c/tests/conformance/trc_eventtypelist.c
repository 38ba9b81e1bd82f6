/* shall: posix_trace_eventtypelist_getnext_id returns each event type of the stream (system types and mapped user types) once, then sets unavailable; posix_trace_eventtypelist_rewind starts over.
 * where: posix_trace_eventtypelist_getnext_id()/rewind(), DESCRIPTION
 * option: TRC
 */
#include "conformance.h"

int main(void) {
    trace_id_t t; trace_event_id_t a, b, it; int un, n = 0, seen_a = 0, seen_b = 0, seen_start = 0;
    OK(posix_trace_create(0, NULL, &t));
    OK(posix_trace_eventid_open("list-a", &a));
    OK(posix_trace_eventid_open("list-b", &b));
    for (;;) {
        OK(posix_trace_eventtypelist_getnext_id(t, &it, &un));
        if (un) break;
        n++; seen_a += it == a; seen_b += it == b; seen_start += it == POSIX_TRACE_START;
    }
    EQ(seen_a, 1); EQ(seen_b, 1); EQ(seen_start, 1);
    CHECK(n >= 8 + 2);
    OK(posix_trace_eventtypelist_getnext_id(t, &it, &un)); CHECK(un);
    OK(posix_trace_eventtypelist_rewind(t));
    int m = 0;
    for (;;) { OK(posix_trace_eventtypelist_getnext_id(t, &it, &un)); if (un) break; m++; }
    EQ(m, n);
    OK(posix_trace_shutdown(t));
    return 0;
}
