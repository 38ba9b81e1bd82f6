/* shall: A stream keeps the attributes it was created with: changing or destroying the attributes object afterwards does not affect it.
 * where: posix_trace_create(), DESCRIPTION; posix_trace_attr_destroy(), DESCRIPTION
 * option: TRC
 */
#include "conformance.h"

int main(void) {
    trace_attr_t a, got; trace_id_t t; char s[TRACE_NAME_MAX + 1];
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_setname(&a, "before"));
    OK(posix_trace_create(0, &a, &t));
    OK(posix_trace_attr_setname(&a, "after"));
    OK(posix_trace_attr_setstreamfullpolicy(&a, POSIX_TRACE_UNTIL_FULL));
    OK(posix_trace_attr_destroy(&a));
    OK(posix_trace_attr_init(&got));
    OK(posix_trace_get_attr(t, &got));
    OK(posix_trace_attr_getname(&got, s)); CHECK(strcmp(s, "before") == 0);
    int pol; OK(posix_trace_attr_getstreamfullpolicy(&got, &pol)); EQ(pol, POSIX_TRACE_LOOP);
    OK(posix_trace_shutdown(t));
    return 0;
}
