/* shall: posix_trace_event in a process that no stream traces, or with a stream that is not running, has no effect (and no error: it returns nothing).
 * where: posix_trace_event(), DESCRIPTION
 * option: TRC
 */
#include "conformance.h"

int main(void) {
    trace_event_id_t id; trace_id_t t; tk_event e[4];
    OK(posix_trace_eventid_open("nostream", &id));
    for (int i = 0; i < 1000; i++) posix_trace_event(id, &i, sizeof i);
    OK(posix_trace_create(0, NULL, &t));
    posix_trace_event(id, "suspended", 9);
    EQ(tk_read(t, 1, e, 4), 0);
    OK(posix_trace_shutdown(t));
    posix_trace_event(id, "after", 5);
    return 0;
}
