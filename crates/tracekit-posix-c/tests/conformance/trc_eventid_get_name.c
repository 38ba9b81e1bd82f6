/* shall: posix_trace_eventid_get_name returns the name of a user or system event type of the stream, the same on every call, and fails with EINVAL for an id without a name or an invalid trace identifier.
 * where: posix_trace_eventid_get_name(), DESCRIPTION and ERRORS (EINVAL)
 * option: TRC
 */
#include "conformance.h"

int main(void) {
    trace_id_t t; trace_event_id_t id; char name[TRACE_EVENT_NAME_MAX + 1];
    OK(posix_trace_create(0, NULL, &t));
    OK(posix_trace_eventid_open("named", &id));
    OK(posix_trace_eventid_get_name(t, id, name)); CHECK(strcmp(name, "named") == 0);
    OK(posix_trace_eventid_get_name(t, id, name)); CHECK(strcmp(name, "named") == 0);
    OK(posix_trace_eventid_get_name(t, POSIX_TRACE_START, name)); CHECK(strcmp(name, "posix_trace_start") == 0);
    OK(posix_trace_eventid_get_name(t, POSIX_TRACE_UNNAMED_USEREVENT, name));
    CHECK(strcmp(name, "posix_trace_unnamed_userevent") == 0);
    ERR(posix_trace_eventid_get_name(t, id + 100, name), EINVAL);
    ERR(posix_trace_eventid_get_name(t + 12345, id, name), EINVAL);
    OK(posix_trace_shutdown(t));
    return 0;
}
