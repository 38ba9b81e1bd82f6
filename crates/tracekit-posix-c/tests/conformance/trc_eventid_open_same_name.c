/* shall: posix_trace_eventid_open returns the same identifier for the same name, different ones for different names; posix_trace_eventid_equal tells them apart.
 * where: posix_trace_eventid_open(), DESCRIPTION
 * option: TRC
 */
#include "conformance.h"

int main(void) {
    trace_id_t t; trace_event_id_t a, b, a2;
    OK(posix_trace_create(0, NULL, &t));
    OK(posix_trace_eventid_open("alpha", &a));
    OK(posix_trace_eventid_open("beta", &b));
    OK(posix_trace_eventid_open("alpha", &a2));
    CHECK(posix_trace_eventid_equal(t, a, a2));
    CHECK(!posix_trace_eventid_equal(t, a, b));
    OK(posix_trace_shutdown(t));
    return 0;
}
