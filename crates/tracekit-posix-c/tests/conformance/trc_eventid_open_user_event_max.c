/* shall: Once {TRACE_USER_EVENT_MAX} user event types are defined (the unnamed one included), posix_trace_eventid_open succeeds and returns POSIX_TRACE_UNNAMED_USEREVENT.
 * where: posix_trace_eventid_open(), DESCRIPTION; <limits.h> TRACE_USER_EVENT_MAX
 * option: TRC
 */
#include "conformance.h"

int main(void) {
    trace_event_id_t id; char name[32];
    for (int i = 0; i < TRACE_USER_EVENT_MAX - 1; i++) {
        snprintf(name, sizeof name, "type%d", i);
        OK(posix_trace_eventid_open(name, &id));
        CHECK(id != POSIX_TRACE_UNNAMED_USEREVENT);
    }
    OK(posix_trace_eventid_open("one-too-many", &id));
    EQ(id, POSIX_TRACE_UNNAMED_USEREVENT);
    OK(posix_trace_eventid_open("type3", &id));
    CHECK(id != POSIX_TRACE_UNNAMED_USEREVENT);
    return 0;
}
