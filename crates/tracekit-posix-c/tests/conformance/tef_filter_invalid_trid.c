/* shall: posix_trace_set_filter and posix_trace_get_filter fail with EINVAL for a value that is not an active trace stream identifier.
 * where: posix_trace_set_filter()/get_filter(), ERRORS (EINVAL)
 * option: TEF
 */
#include "conformance.h"

int main(void) {
    trace_id_t t; trace_event_set_t s;
    OK(posix_trace_eventset_empty(&s));
    OK(posix_trace_create(0, NULL, &t));
    OK(posix_trace_shutdown(t));
    ERR(posix_trace_set_filter(t, &s, POSIX_TRACE_SET_EVENTSET), EINVAL);
    ERR(posix_trace_get_filter(t, &s), EINVAL);
    return 0;
}
