/* shall: Tracing goes on while a flush runs: events traced during a flush are kept, before FLUSH_STOP if older than it, after it otherwise, and the log stays in time order.
 * where: posix_trace_flush(), DESCRIPTION; POSIX_TRACE_FLUSH
 * option: TRL
 */
#include "conformance.h"

#define N 20000
static trace_event_id_t id;
static volatile int done;
static void *writer(void *arg) {
    (void)arg;
    for (int i = 0; i < N; i++) posix_trace_event(id, &i, sizeof i);
    done = 1;
    return NULL;
}
int main(void) {
    trace_attr_t a; trace_id_t t; pthread_t th; tk_event *e = malloc(4 * N * sizeof *e);
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_setlogfullpolicy(&a, POSIX_TRACE_APPEND));
    OK(posix_trace_attr_setstreamsize(&a, 64 << 10));
    OK(posix_trace_create_withlog(0, &a, tk_log_fd("during.log"), &t));
    OK(posix_trace_eventid_open("during", &id));
    OK(posix_trace_start(t));
    pthread_create(&th, NULL, writer, NULL);
    int flushes = 0;
    while (!done) { OK(posix_trace_flush(t)); flushes++; usleep(200); }
    pthread_join(th, NULL);
    EQ(tk_status(t).posix_stream_overrun_status, POSIX_TRACE_NO_OVERRUN);
    OK(posix_trace_shutdown(t));
    int n = tk_read_log("during.log", e, 4 * N, NULL);
    tk_check_sequence(e, n, id, N);
    tk_check_time_order(e, n);
    CHECK(tk_count(e, n, POSIX_TRACE_FLUSH_START) >= 2);
    EQ(tk_count(e, n, POSIX_TRACE_FLUSH_START), tk_count(e, n, POSIX_TRACE_FLUSH_STOP));
    return 0;
}
