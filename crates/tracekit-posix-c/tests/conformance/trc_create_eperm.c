/* shall: posix_trace_create fails with EPERM when the caller has no privilege to trace the process.
 * where: posix_trace_create(), ERRORS (EPERM)
 * option: TRC
 */
#include "conformance.h"

int main(void) {
    trace_id_t t;
    if (geteuid() == 0) SKIP("running as root: every process may be traced");
    ERR(posix_trace_create(1, NULL, &t), EPERM);
    return 0;
}
