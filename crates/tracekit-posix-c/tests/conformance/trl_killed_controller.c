/* shall: A controller terminated by a signal has its streams shut down too: the log is completed with every event recorded before the signal.
 * where: §2.4.3 Signal Actions (a process ended by a signal's default action has the consequences of _exit()); _exit(), DESCRIPTION (Trace option)
 * option: TRL
 * deviation: No code of a process runs after a fatal signal: the stream's keeper (a small process forked when the stream was created) sees the controller go and completes the log shortly after, from where the controller's last flush left it (the STOP, FLUSH_START and FLUSH_STOP it records carry the keeper's pid).
 */
#include "conformance.h"

/* The controller, in a child: a stream with log `name`, N events of type
 * "before-end" (payload 0..N-1), then `end` ends the process image. */
static void controller(const char *name, int n, void (*end)(void)) {
    trace_id_t t; trace_event_id_t id;
    OK(posix_trace_create_withlog(0, NULL, tk_log_fd(name), &t));
    OK(posix_trace_eventid_open("before-end", &id));
    OK(posix_trace_start(t));
    for (int i = 0; i < n; i++) posix_trace_event(id, &i, sizeof i);
    end();
    _exit(99);
}
static pid_t __attribute__((unused)) spawn_controller(const char *name, int n, void (*end)(void)) {
    fflush(NULL);
    pid_t p = fork();
    CHECK(p >= 0);
    if (p == 0) controller(name, n, end);
    return p;
}
/* The log holds START, the N events, and ends with the shutdown's STOP
 * then FLUSH_START/FLUSH_STOP (the last flush). */
static void check_complete(const char *name, int n) {
    tk_event *e = malloc((n + 64) * sizeof *e); trace_id_t lt; char s[TRACE_EVENT_NAME_MAX + 1];
    int m = tk_read_log(name, e, n + 64, &lt);
    EQ(e[0].id, POSIX_TRACE_START);
    int user = -1;
    for (int i = 0; i < m; i++) if (e[i].id >= 1024) { user = e[i].id; break; }
    CHECK(user >= 0);
    OK(posix_trace_eventid_get_name(lt, user, s)); CHECK(strcmp(s, "before-end") == 0);
    tk_check_sequence(e, m, user, n);
    tk_check_time_order(e, m);
    EQ(e[m - 1].id, POSIX_TRACE_FLUSH_STOP);
    EQ(tk_status(lt).posix_stream_overrun_status, POSIX_TRACE_NO_OVERRUN);
    OK(posix_trace_close(lt));
}

static void do_wait(void) { printf("ready\n"); fflush(stdout); for (;;) pause(); }
int main(void) {
    int sigs[] = {SIGKILL, SIGTERM, SIGSEGV};
    const char *names[] = {"kill.log", "term.log", "segv.log"};
    for (int i = 0; i < 3; i++) {
        int out[2]; CHECK(pipe(out) == 0);
        fflush(NULL);
        pid_t p = fork();
        if (p == 0) { dup2(out[1], 1); controller(names[i], 500, do_wait); }
        char line[16] = {0};
        CHECK(read(out[0], line, sizeof line - 1) > 0 && strcmp(line, "ready\n") == 0);
        kill(p, sigs[i]);
        int st; waitpid(p, &st, 0);
        CHECK(WIFSIGNALED(st) && WTERMSIG(st) == sigs[i]);
        tk_wait_complete(names[i]);
        check_complete(names[i], 500);
    }
    return 0;
}
