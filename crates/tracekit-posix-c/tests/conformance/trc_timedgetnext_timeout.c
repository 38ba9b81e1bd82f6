/* shall: posix_trace_timedgetnext_event waits until the absolute CLOCK_REALTIME deadline and fails with ETIMEDOUT if no event came.
 * where: posix_trace_timedgetnext_event(), DESCRIPTION and ERRORS (ETIMEDOUT)
 * option: TRC
 */
#include "conformance.h"

int main(void) {
    trace_id_t t; struct posix_trace_event_info ev; char buf[16]; size_t len; int un;
    OK(posix_trace_create(0, NULL, &t));
    struct timespec dl; clock_gettime(CLOCK_REALTIME, &dl);
    long long deadline = tk_ns(dl) + 30000000LL;
    dl.tv_sec = deadline / 1000000000LL; dl.tv_nsec = deadline % 1000000000LL;
    ERR(posix_trace_timedgetnext_event(t, &ev, buf, sizeof buf, &len, &un, &dl), ETIMEDOUT);
    CHECK(tk_now() >= deadline);
    OK(posix_trace_shutdown(t));
    return 0;
}
