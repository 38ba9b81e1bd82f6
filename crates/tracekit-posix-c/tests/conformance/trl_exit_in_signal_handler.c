/* shall: A controller that calls _exit from a signal handler ends at once (no hang) and its log is complete, holding an unbroken sequence of the events recorded before.
 * where: _exit(), DESCRIPTION (Trace option); §2.4.3 Signal Actions (_exit is async-signal-safe)
 * option: TRL
 * deviation: If the signal interrupted the controller inside the engine (holding one of its locks), _exit leaves the shutdown to the stream's keeper, which completes the log shortly after, instead of deadlocking.
 */
#include "conformance.h"

static void on_term(int sig) { (void)sig; _exit(0); }
int main(void) {
    int out[2]; CHECK(pipe(out) == 0);
    fflush(NULL);
    pid_t p = fork();
    if (p == 0) {
        trace_id_t t; trace_event_id_t id; struct posix_trace_status_info st;
        signal(SIGTERM, on_term);
        OK(posix_trace_create_withlog(0, NULL, tk_log_fd("handler.log"), &t));
        OK(posix_trace_eventid_open("until-signal", &id));
        OK(posix_trace_start(t));
        for (int i = 0;; i++) {
            posix_trace_event(id, &i, sizeof i);
            if (i == 1000) CHECK(write(out[1], "r", 1) == 1);
            if (i % 64 == 0) posix_trace_get_status(t, &st); /* now and then inside the engine */
        }
    }
    char c; CHECK(read(out[0], &c, 1) == 1);
    usleep(20000);
    kill(p, SIGTERM);
    int st; waitpid(p, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    tk_wait_complete("handler.log");
    int max = 4 << 20; tk_event *e = malloc(max * sizeof *e);
    int n = tk_read_log("handler.log", e, max, NULL);
    int user = -1;
    for (int i = 0; i < n; i++) if (e[i].id >= 1024) { user = e[i].id; break; }
    CHECK(user >= 0);
    int count = tk_count(e, n, user);
    CHECK(count > 1000);
    tk_check_sequence(e, n, user, count);
    tk_check_time_order(e, n);
    EQ(tk_count(e, n, POSIX_TRACE_OVERFLOW), 0);
    return 0;
}
