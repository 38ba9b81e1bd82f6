/* shall: POSIX_TRACE_SET_EVENTSET makes the filter the given set, POSIX_TRACE_ADD_EVENTSET adds the set to it, POSIX_TRACE_SUB_EVENTSET removes the set from it; posix_trace_get_filter returns the filter; any other how is EINVAL.
 * where: posix_trace_set_filter(), DESCRIPTION and ERRORS; posix_trace_get_filter(), DESCRIPTION
 * option: TEF
 */
#include "conformance.h"

static int member(trace_event_id_t id, trace_event_set_t *s) { int m; OK(posix_trace_eventset_ismember(id, s, &m)); return m; }
int main(void) {
    trace_id_t t; trace_event_set_t s, f; trace_event_id_t a, b;
    OK(posix_trace_create(0, NULL, &t));
    OK(posix_trace_eventid_open("how-a", &a));
    OK(posix_trace_eventid_open("how-b", &b));
    OK(posix_trace_eventset_empty(&s)); OK(posix_trace_eventset_add(a, &s));
    OK(posix_trace_set_filter(t, &s, POSIX_TRACE_SET_EVENTSET));
    OK(posix_trace_get_filter(t, &f)); CHECK(member(a, &f) && !member(b, &f));
    OK(posix_trace_eventset_empty(&s)); OK(posix_trace_eventset_add(b, &s));
    OK(posix_trace_set_filter(t, &s, POSIX_TRACE_ADD_EVENTSET));
    OK(posix_trace_get_filter(t, &f)); CHECK(member(a, &f) && member(b, &f));
    OK(posix_trace_eventset_empty(&s)); OK(posix_trace_eventset_add(a, &s));
    OK(posix_trace_set_filter(t, &s, POSIX_TRACE_SUB_EVENTSET));
    OK(posix_trace_get_filter(t, &f)); CHECK(!member(a, &f) && member(b, &f));
    ERR(posix_trace_set_filter(t, &s, 4711), EINVAL);
    OK(posix_trace_get_filter(t, &f)); CHECK(!member(a, &f) && member(b, &f));
    OK(posix_trace_shutdown(t));
    return 0;
}
