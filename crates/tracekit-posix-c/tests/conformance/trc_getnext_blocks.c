/* shall: posix_trace_getnext_event on an active stream without log blocks while the stream is empty and returns the next event once one is recorded.
 * where: posix_trace_getnext_event(), DESCRIPTION
 * option: TRC
 */
#include "conformance.h"

static trace_event_id_t id;
static void *later(void *arg) { (void)arg; usleep(50000); posix_trace_event(id, "late", 4); return NULL; }
int main(void) {
    trace_id_t t; struct posix_trace_event_info ev; char buf[16]; size_t len; int un; pthread_t th;
    OK(posix_trace_create(0, NULL, &t));
    OK(posix_trace_eventid_open("late", &id));
    OK(posix_trace_start(t));
    OK(posix_trace_getnext_event(t, &ev, buf, sizeof buf, &len, &un)); EQ(ev.posix_event_id, POSIX_TRACE_START);
    long long before = tk_now();
    pthread_create(&th, NULL, later, NULL);
    OK(posix_trace_getnext_event(t, &ev, buf, sizeof buf, &len, &un));
    EQ(un, 0); EQ(ev.posix_event_id, id); EQ(len, 4);
    CHECK(tk_now() - before >= 40000000LL);
    pthread_join(th, NULL);
    OK(posix_trace_shutdown(t));
    return 0;
}
