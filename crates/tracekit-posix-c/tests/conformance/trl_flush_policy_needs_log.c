/* shall: POSIX_TRACE_FLUSH is meant for streams with a log: posix_trace_create of a stream without log with that policy fails with EINVAL.
 * where: posix_trace_attr_setstreamfullpolicy() (POSIX_TRACE_FLUSH); posix_trace_create(), ERRORS (EINVAL)
 * option: TRL
 */
#include "conformance.h"

int main(void) {
    trace_attr_t a; trace_id_t t;
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_setstreamfullpolicy(&a, POSIX_TRACE_FLUSH));
    ERR(posix_trace_create(0, &a, &t), EINVAL);
    return 0;
}
