/* shall: The inheritance attribute defaults to POSIX_TRACE_CLOSE_FOR_CHILD, takes POSIX_TRACE_INHERITED and POSIX_TRACE_CLOSE_FOR_CHILD, and refuses other values with EINVAL.
 * where: posix_trace_attr_getinherited()/setinherited(), DESCRIPTION and ERRORS
 * option: TRI
 */
#include "conformance.h"

int main(void) {
    trace_attr_t a, got; int pol; trace_id_t t;
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_getinherited(&a, &pol)); EQ(pol, POSIX_TRACE_CLOSE_FOR_CHILD);
    OK(posix_trace_attr_setinherited(&a, POSIX_TRACE_INHERITED));
    OK(posix_trace_attr_getinherited(&a, &pol)); EQ(pol, POSIX_TRACE_INHERITED);
    ERR(posix_trace_attr_setinherited(&a, 3), EINVAL);
    OK(posix_trace_create(0, &a, &t));
    OK(posix_trace_attr_init(&got)); OK(posix_trace_get_attr(t, &got));
    OK(posix_trace_attr_getinherited(&got, &pol)); EQ(pol, POSIX_TRACE_INHERITED);
    OK(posix_trace_shutdown(t));
    return 0;
}
