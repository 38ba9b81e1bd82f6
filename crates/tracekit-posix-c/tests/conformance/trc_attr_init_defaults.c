/* shall: posix_trace_attr_init initialises every attribute to its default: stream-full-policy POSIX_TRACE_LOOP, an empty trace name, a generation version and a clock resolution, implementation-defined sizes.
 * where: posix_trace_attr_init(), DESCRIPTION; §2.11.1.4 trace stream attributes
 * option: TRC
 */
#include "conformance.h"

int main(void) {
    trace_attr_t a; int pol; size_t sz; char s[TRACE_NAME_MAX + 1]; struct timespec res;
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_getstreamfullpolicy(&a, &pol)); EQ(pol, POSIX_TRACE_LOOP);
    OK(posix_trace_attr_getname(&a, s)); EQ(strlen(s), 0);
    OK(posix_trace_attr_getgenversion(&a, s)); CHECK(strlen(s) > 0 && strlen(s) <= TRACE_NAME_MAX);
    OK(posix_trace_attr_getclockres(&a, &res)); CHECK(tk_ns(res) > 0 && tk_ns(res) <= 1000000000LL);
    OK(posix_trace_attr_getstreamsize(&a, &sz)); CHECK(sz > 0);
    OK(posix_trace_attr_getmaxdatasize(&a, &sz)); CHECK(sz > 0);
    OK(posix_trace_attr_destroy(&a));
    return 0;
}
