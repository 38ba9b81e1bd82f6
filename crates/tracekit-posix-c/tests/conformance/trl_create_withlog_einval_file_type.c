/* shall: posix_trace_create_withlog fails with EINVAL when the file cannot hold a log under its log-full-policy.
 * where: posix_trace_create_withlog(), ERRORS (EINVAL: file type incompatible with the log-full-policy)
 * option: TRL
 * deviation: The compatible file types are implementation-defined: tracekit writes logs to regular files only (a log is rewritten in place: header, blocks, type table), so a pipe or terminal is EINVAL under every policy.
 */
#include "conformance.h"

int main(void) {
    trace_id_t t; int p[2]; CHECK(pipe(p) == 0);
    ERR(posix_trace_create_withlog(0, NULL, p[1], &t), EINVAL);
    return 0;
}
