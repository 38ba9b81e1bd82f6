/* shall: posix_trace_eventset_empty makes a set with no type; posix_trace_eventset_fill with POSIX_TRACE_SYSTEM_EVENTS holds every system type, with POSIX_TRACE_ALL_EVENTS every type, with POSIX_TRACE_WOPID_EVENTS the implementation's process-independent system types; any other selector is EINVAL.
 * where: posix_trace_eventset_empty()/fill(), DESCRIPTION and ERRORS
 * option: TEF
 * deviation: tracekit defines no implementation-specific system event types, so the POSIX_TRACE_WOPID_EVENTS set is empty.
 */
#include "conformance.h"

static int member(trace_event_id_t id, trace_event_set_t *s) { int m; OK(posix_trace_eventset_ismember(id, s, &m)); return m; }
int main(void) {
    trace_event_set_t s; trace_event_id_t user;
    OK(posix_trace_eventid_open("fill-user", &user));
    trace_event_id_t sys[] = {POSIX_TRACE_ERROR, POSIX_TRACE_START, POSIX_TRACE_STOP, POSIX_TRACE_OVERFLOW,
                              POSIX_TRACE_RESUME, POSIX_TRACE_FILTER, POSIX_TRACE_FLUSH_START, POSIX_TRACE_FLUSH_STOP};
    OK(posix_trace_eventset_empty(&s));
    for (int i = 0; i < 8; i++) CHECK(!member(sys[i], &s));
    CHECK(!member(user, &s));
    OK(posix_trace_eventset_fill(&s, POSIX_TRACE_SYSTEM_EVENTS));
    for (int i = 0; i < 8; i++) CHECK(member(sys[i], &s));
    CHECK(!member(user, &s));
    OK(posix_trace_eventset_fill(&s, POSIX_TRACE_ALL_EVENTS));
    for (int i = 0; i < 8; i++) CHECK(member(sys[i], &s));
    CHECK(member(user, &s)); CHECK(member(POSIX_TRACE_UNNAMED_USEREVENT, &s));
    OK(posix_trace_eventset_fill(&s, POSIX_TRACE_WOPID_EVENTS));
    for (int i = 0; i < 8; i++) CHECK(!member(sys[i], &s));
    ERR(posix_trace_eventset_fill(&s, 999), EINVAL);
    return 0;
}
