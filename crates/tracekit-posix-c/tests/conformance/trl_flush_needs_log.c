/* shall: posix_trace_flush fails with EINVAL on a stream without log or a value that is not an active stream.
 * where: posix_trace_flush(), ERRORS (EINVAL)
 * option: TRL
 */
#include "conformance.h"

int main(void) {
    trace_id_t t;
    OK(posix_trace_create(0, NULL, &t));
    ERR(posix_trace_flush(t), EINVAL);
    OK(posix_trace_shutdown(t));
    ERR(posix_trace_flush(t), EINVAL);
    return 0;
}
