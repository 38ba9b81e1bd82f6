/* shall: posix_trace_trygetnext_event never blocks: on an empty stream it returns at once with unavailable set.
 * where: posix_trace_trygetnext_event(), DESCRIPTION
 * option: TRC
 */
#include "conformance.h"

int main(void) {
    trace_id_t t; struct posix_trace_event_info ev; char buf[16]; size_t len; int un = 0;
    OK(posix_trace_create(0, NULL, &t));
    long long before = tk_now();
    OK(posix_trace_trygetnext_event(t, &ev, buf, sizeof buf, &len, &un));
    CHECK(un != 0);
    CHECK(tk_now() - before < 50000000LL);
    OK(posix_trace_shutdown(t));
    return 0;
}
