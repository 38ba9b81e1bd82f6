/* shall: A controller killed while it flushes a busy POSIX_TRACE_FLUSH stream loses nothing: the completed log holds an unbroken sequence of the events recorded before the kill.
 * where: posix_trace_flush(), DESCRIPTION; exit(), DESCRIPTION (Trace option)
 * option: TRL
 * deviation: The slots of the stream are handed back to its writers only once their events are in the log file, and the log's header records where the stream was read up to: the keeper reads on from there. What the controller's flusher had copied but not yet written is read again, not lost.
 */
#include "conformance.h"

static trace_event_id_t id;
static void *writer(void *arg) {
    (void)arg; char payload[64] = {0};
    for (int i = 0;; i++) { memcpy(payload, &i, sizeof i); posix_trace_event(id, payload, sizeof payload); }
    return NULL;
}
int main(void) {
    int out[2]; CHECK(pipe(out) == 0);
    fflush(NULL);
    pid_t p = fork();
    if (p == 0) {
        trace_attr_t a; trace_id_t t; pthread_t th;
        OK(posix_trace_attr_init(&a));
        OK(posix_trace_attr_setlogfullpolicy(&a, POSIX_TRACE_APPEND));
        OK(posix_trace_attr_setstreamsize(&a, 256 << 10));
        OK(posix_trace_create_withlog(0, &a, tk_log_fd("midflush.log"), &t));
        OK(posix_trace_eventid_open("busy", &id));
        OK(posix_trace_start(t));
        pthread_create(&th, NULL, writer, NULL);
        usleep(200000);
        CHECK(write(out[1], "r", 1) == 1);
        for (;;) pause();
    }
    char c; CHECK(read(out[0], &c, 1) == 1);
    kill(p, SIGKILL);
    waitpid(p, NULL, 0);
    tk_wait_complete("midflush.log");
    int max = 4 << 20; tk_event *e = malloc(max * sizeof *e); trace_id_t lt;
    int n = tk_read_log("midflush.log", e, max, &lt);
    int user = -1, count = 0;
    for (int i = 0; i < n; i++) if (e[i].id >= 1024) { user = e[i].id; break; }
    CHECK(user >= 0);
    count = tk_count(e, n, user);
    CHECK(count > 1000);
    tk_check_sequence(e, n, user, count);
    tk_check_time_order(e, n);
    /* No loss inside the sequence. (The event being written when the
     * kill came was never recorded: its slot is counted lost, which may
     * set the overrun status, but no event follows it.) */
    EQ(tk_count(e, n, POSIX_TRACE_OVERFLOW), 0);
    OK(posix_trace_close(lt));
    return 0;
}
