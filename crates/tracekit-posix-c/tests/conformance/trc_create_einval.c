/* shall: posix_trace_create fails with EINVAL when the attributes object is invalid.
 * where: posix_trace_create(), ERRORS (EINVAL)
 * option: TRC
 */
#include "conformance.h"

int main(void) {
    trace_attr_t a; trace_id_t t;
    memset(&a, 0x5a, sizeof a);
    ERR(posix_trace_create(0, &a, &t), EINVAL);
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_destroy(&a));
    ERR(posix_trace_create(0, &a, &t), EINVAL);
    return 0;
}
