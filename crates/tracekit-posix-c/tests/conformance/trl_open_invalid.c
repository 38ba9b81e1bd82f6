/* shall: posix_trace_open fails with EINVAL for a file that is not a valid trace log.
 * where: posix_trace_open(), ERRORS (EINVAL)
 * option: TRL
 */
#include "conformance.h"

int main(void) {
    trace_id_t t;
    int fd = tk_log_fd("junk.log");
    CHECK(write(fd, "this is not a trace log, only text of some length", 50) == 50);
    ERR(posix_trace_open(fd, &t), EINVAL);
    ERR(posix_trace_open(-1, &t), EINVAL);
    int empty = tk_log_fd("empty.log");
    ERR(posix_trace_open(empty, &t), EINVAL);
    return 0;
}
