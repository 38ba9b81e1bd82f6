/* shall: The child of a trace controller process does not control its parent's streams: the parent's trace identifiers are invalid (EINVAL) in the child.
 * where: fork(), DESCRIPTION (Trace option)
 * option: TRC
 */
#include "conformance.h"

static trace_id_t t;
static void child(void *arg) {
    (void)arg; struct posix_trace_status_info st;
    if (posix_trace_get_status(t, &st) != EINVAL) _exit(2);
    if (posix_trace_stop(t) != EINVAL) _exit(3);
    if (posix_trace_shutdown(t) != EINVAL) _exit(4);
}
int main(void) {
    OK(posix_trace_create(0, NULL, &t));
    OK(posix_trace_start(t));
    EQ(tk_in_child(child, NULL), 0);
    EQ(tk_status(t).posix_stream_status, POSIX_TRACE_RUNNING);
    OK(posix_trace_shutdown(t));
    return 0;
}
