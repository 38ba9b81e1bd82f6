/* shall: The creation-time attribute of a stream is set when posix_trace_create creates it (CLOCK_REALTIME), and posix_trace_get_attr returns it.
 * where: posix_trace_attr_getcreatetime(), DESCRIPTION; posix_trace_create(), DESCRIPTION
 * option: TRC
 */
#include "conformance.h"

int main(void) {
    trace_attr_t a; trace_id_t t; struct timespec ct;
    long long before = tk_now();
    OK(posix_trace_create(0, NULL, &t));
    long long after = tk_now();
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_get_attr(t, &a));
    OK(posix_trace_attr_getcreatetime(&a, &ct));
    CHECK(tk_ns(ct) >= before && tk_ns(ct) <= after);
    OK(posix_trace_shutdown(t));
    return 0;
}
