/* shall: posix_trace_eventid_open fails with ENAMETOOLONG for a name longer than {TRACE_EVENT_NAME_MAX}; a name of exactly that length is accepted.
 * where: posix_trace_eventid_open(), ERRORS (ENAMETOOLONG)
 * option: TRC
 */
#include "conformance.h"

int main(void) {
    char name[TRACE_EVENT_NAME_MAX + 2]; trace_event_id_t id;
    memset(name, 'n', TRACE_EVENT_NAME_MAX + 1); name[TRACE_EVENT_NAME_MAX + 1] = 0;
    ERR(posix_trace_eventid_open(name, &id), ENAMETOOLONG);
    name[TRACE_EVENT_NAME_MAX] = 0;
    OK(posix_trace_eventid_open(name, &id));
    return 0;
}
