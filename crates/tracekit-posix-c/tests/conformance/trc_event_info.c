/* shall: A recorded event carries its type, the pid and thread of the process that traced it, the address of the posix_trace_event call, POSIX_TRACE_NOT_TRUNCATED, its time, and its data.
 * where: posix_trace_event(), DESCRIPTION; §2.11.1.3 posix_trace_event_info
 * option: TRC
 */
#include "conformance.h"

static void __attribute__((noinline)) emit(trace_event_id_t id) { posix_trace_event(id, "payload", 7); }
int main(void) {
    trace_id_t t; tk_event e[8]; trace_event_id_t id;
    OK(posix_trace_create(0, NULL, &t));
    OK(posix_trace_eventid_open("info", &id));
    OK(posix_trace_start(t));
    long long before = tk_now();
    emit(id);
    int n = tk_read(t, 1, e, 8);
    int i = tk_index(e, n, id); CHECK(i >= 0);
    EQ(e[i].pid, getpid());
    CHECK(pthread_equal(e[i].thread, pthread_self()));
    CHECK((char *)e[i].prog > (char *)emit && (char *)e[i].prog < (char *)emit + 256);
    EQ(e[i].trunc, POSIX_TRACE_NOT_TRUNCATED);
    CHECK(e[i].ts >= before - 1000000 && e[i].ts <= tk_now() + 1000000);
    EQ(e[i].len, 7); CHECK(memcmp(e[i].data, "payload", 7) == 0);
    OK(posix_trace_shutdown(t));
    return 0;
}
