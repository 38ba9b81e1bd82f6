/* shall: After posix_trace_shutdown the trace stream identifier is no longer valid: every function given it fails with EINVAL.
 * where: posix_trace_shutdown(), DESCRIPTION
 * option: TRC
 */
#include "conformance.h"

int main(void) {
    trace_id_t t; struct posix_trace_status_info st; trace_event_set_t set; trace_attr_t a;
    struct posix_trace_event_info ev; char buf[8]; size_t len; int un;
    OK(posix_trace_create(0, NULL, &t));
    OK(posix_trace_shutdown(t));
    OK(posix_trace_attr_init(&a));
    ERR(posix_trace_start(t), EINVAL);
    ERR(posix_trace_stop(t), EINVAL);
    ERR(posix_trace_clear(t), EINVAL);
    ERR(posix_trace_shutdown(t), EINVAL);
    ERR(posix_trace_get_status(t, &st), EINVAL);
    ERR(posix_trace_get_attr(t, &a), EINVAL);
    ERR(posix_trace_get_filter(t, &set), EINVAL);
    ERR(posix_trace_trygetnext_event(t, &ev, buf, sizeof buf, &len, &un), EINVAL);
    return 0;
}
