/* shall: The system event types have the names posix_trace_error, posix_trace_start, posix_trace_stop, posix_trace_overflow, posix_trace_resume, posix_trace_filter, posix_trace_flush_start and posix_trace_flush_stop.
 * where: §2.11.2.1 system trace event types (names)
 * option: TRC
 */
#include "conformance.h"

int main(void) {
    trace_id_t t; char name[TRACE_EVENT_NAME_MAX + 1];
    struct { trace_event_id_t id; const char *name; } sys[] = {
        {POSIX_TRACE_ERROR, "posix_trace_error"}, {POSIX_TRACE_START, "posix_trace_start"},
        {POSIX_TRACE_STOP, "posix_trace_stop"}, {POSIX_TRACE_OVERFLOW, "posix_trace_overflow"},
        {POSIX_TRACE_RESUME, "posix_trace_resume"}, {POSIX_TRACE_FILTER, "posix_trace_filter"},
        {POSIX_TRACE_FLUSH_START, "posix_trace_flush_start"}, {POSIX_TRACE_FLUSH_STOP, "posix_trace_flush_stop"},
    };
    OK(posix_trace_create(0, NULL, &t));
    for (size_t i = 0; i < sizeof sys / sizeof sys[0]; i++) {
        OK(posix_trace_eventid_get_name(t, sys[i].id, name));
        if (strcmp(name, sys[i].name) != 0) FAIL("id %u is named %s, expected %s", sys[i].id, name, sys[i].name);
    }
    OK(posix_trace_shutdown(t));
    return 0;
}
