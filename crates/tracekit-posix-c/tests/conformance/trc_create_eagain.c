/* shall: posix_trace_create fails with EAGAIN once {TRACE_SYS_MAX} streams exist; shutting one down makes room.
 * where: posix_trace_create(), ERRORS (EAGAIN); <limits.h> TRACE_SYS_MAX
 * option: TRC
 * deviation: {TRACE_SYS_MAX} counts the streams and logs of one process, not of the whole system (streams live in each controller's memory; there is no system-wide registry).
 */
#include "conformance.h"

int main(void) {
    trace_id_t t[TRACE_SYS_MAX + 1]; trace_attr_t a;
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_setstreamsize(&a, 4096));
    for (int i = 0; i < TRACE_SYS_MAX; i++) OK(posix_trace_create(0, &a, &t[i]));
    ERR(posix_trace_create(0, &a, &t[TRACE_SYS_MAX]), EAGAIN);
    OK(posix_trace_shutdown(t[0]));
    OK(posix_trace_create(0, &a, &t[0]));
    for (int i = 0; i < TRACE_SYS_MAX; i++) OK(posix_trace_shutdown(t[i]));
    return 0;
}
