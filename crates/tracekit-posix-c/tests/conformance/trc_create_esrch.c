/* shall: posix_trace_create fails with ESRCH when no process has the given pid.
 * where: posix_trace_create(), ERRORS (ESRCH)
 * option: TRC
 */
#include "conformance.h"

int main(void) {
    trace_id_t t;
    pid_t p = fork();
    if (p == 0) _exit(0);
    waitpid(p, NULL, 0); /* reaped: the pid names no process now */
    ERR(posix_trace_create(p, NULL, &t), ESRCH);
    return 0;
}
