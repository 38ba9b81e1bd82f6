/* shall: log-full-policy defaults to POSIX_TRACE_LOOP and takes POSIX_TRACE_LOOP, POSIX_TRACE_UNTIL_FULL and POSIX_TRACE_APPEND (others EINVAL); log-max-size is read back as set.
 * where: posix_trace_attr_getlogfullpolicy()/setlogfullpolicy(), getlogsize()/setlogsize(), DESCRIPTION
 * option: TRL
 */
#include "conformance.h"

int main(void) {
    trace_attr_t a; int pol; size_t sz;
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_getlogfullpolicy(&a, &pol)); EQ(pol, POSIX_TRACE_LOOP);
    OK(posix_trace_attr_getlogsize(&a, &sz)); CHECK(sz > 0);
    int ok[] = {POSIX_TRACE_UNTIL_FULL, POSIX_TRACE_APPEND, POSIX_TRACE_LOOP};
    for (int i = 0; i < 3; i++) {
        OK(posix_trace_attr_setlogfullpolicy(&a, ok[i]));
        OK(posix_trace_attr_getlogfullpolicy(&a, &pol)); EQ(pol, ok[i]);
    }
    ERR(posix_trace_attr_setlogfullpolicy(&a, POSIX_TRACE_FLUSH), EINVAL);
    ERR(posix_trace_attr_setlogfullpolicy(&a, 777), EINVAL);
    OK(posix_trace_attr_setlogsize(&a, 1 << 20));
    OK(posix_trace_attr_getlogsize(&a, &sz)); EQ(sz, 1 << 20);
    return 0;
}
