/* shall: posix_trace_trid_eventid_open fails with ENAMETOOLONG for a name longer than {TRACE_EVENT_NAME_MAX} and with EINVAL for an invalid trace stream identifier.
 * where: posix_trace_trid_eventid_open(), ERRORS
 * option: TEF
 */
#include "conformance.h"

int main(void) {
    trace_id_t t; trace_event_id_t id; char name[TRACE_EVENT_NAME_MAX + 2];
    memset(name, 'x', TRACE_EVENT_NAME_MAX + 1); name[TRACE_EVENT_NAME_MAX + 1] = 0;
    OK(posix_trace_create(0, NULL, &t));
    ERR(posix_trace_trid_eventid_open(t, name, &id), ENAMETOOLONG);
    ERR(posix_trace_trid_eventid_open(t + 999, "ok", &id), EINVAL);
    OK(posix_trace_shutdown(t));
    ERR(posix_trace_trid_eventid_open(t, "ok", &id), EINVAL);
    return 0;
}
