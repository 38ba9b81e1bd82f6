/* shall: Functions given a value that is not a trace stream identifier fail with EINVAL, returned as the function's value (not -1 with errno).
 * where: ERRORS sections of posix_trace_start(), stop(), get_attr(), get_status(), eventtypelist_*(), getnext_event()
 * option: TRC
 */
#include "conformance.h"

int main(void) {
    trace_id_t bad = (trace_id_t)0x7777777712345678UL; trace_attr_t a; struct posix_trace_status_info st;
    struct posix_trace_event_info ev; char buf[8]; size_t len; int un; trace_event_id_t it;
    OK(posix_trace_attr_init(&a));
    errno = 0;
    ERR(posix_trace_start(bad), EINVAL);
    EQ(errno, 0);
    ERR(posix_trace_stop(bad), EINVAL);
    ERR(posix_trace_get_attr(bad, &a), EINVAL);
    ERR(posix_trace_get_status(bad, &st), EINVAL);
    ERR(posix_trace_eventtypelist_getnext_id(bad, &it, &un), EINVAL);
    ERR(posix_trace_eventtypelist_rewind(bad), EINVAL);
    ERR(posix_trace_getnext_event(bad, &ev, buf, sizeof buf, &len, &un), EINVAL);
    ERR(posix_trace_shutdown(bad), EINVAL);
    return 0;
}
