/* shall: posix_trace_eventset_add adds a type (adding a member again is not an error), posix_trace_eventset_del removes one (removing a non-member is not an error), posix_trace_eventset_ismember tells membership.
 * where: posix_trace_eventset_add()/del()/ismember(), DESCRIPTION
 * option: TEF
 */
#include "conformance.h"

int main(void) {
    trace_event_set_t s; trace_event_id_t a, b; int m;
    OK(posix_trace_eventid_open("set-a", &a));
    OK(posix_trace_eventid_open("set-b", &b));
    OK(posix_trace_eventset_empty(&s));
    OK(posix_trace_eventset_add(a, &s));
    OK(posix_trace_eventset_add(a, &s));
    OK(posix_trace_eventset_ismember(a, &s, &m)); CHECK(m);
    OK(posix_trace_eventset_ismember(b, &s, &m)); CHECK(!m);
    OK(posix_trace_eventset_del(b, &s));
    OK(posix_trace_eventset_del(a, &s));
    OK(posix_trace_eventset_ismember(a, &s, &m)); CHECK(!m);
    OK(posix_trace_eventset_add(POSIX_TRACE_STOP, &s));
    OK(posix_trace_eventset_ismember(POSIX_TRACE_STOP, &s, &m)); CHECK(m);
    return 0;
}
