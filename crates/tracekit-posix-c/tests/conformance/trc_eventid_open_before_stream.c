/* shall: A name mapped before any stream traces the process is kept, and applies to streams created later: their events carry the id and the stream knows its name.
 * where: posix_trace_eventid_open(), DESCRIPTION
 * option: TRC
 */
#include "conformance.h"

int main(void) {
    trace_id_t t; trace_event_id_t id; tk_event e[8]; char name[TRACE_EVENT_NAME_MAX + 1];
    OK(posix_trace_eventid_open("early-bird", &id));
    OK(posix_trace_create(0, NULL, &t));
    OK(posix_trace_start(t));
    posix_trace_event(id, "x", 1);
    int n = tk_read(t, 1, e, 8);
    int i = tk_index(e, n, id); CHECK(i >= 0);
    OK(posix_trace_eventid_get_name(t, id, name)); CHECK(strcmp(name, "early-bird") == 0);
    OK(posix_trace_shutdown(t));
    return 0;
}
