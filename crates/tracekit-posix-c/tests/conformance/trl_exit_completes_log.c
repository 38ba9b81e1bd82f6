/* shall: When a controller exits (exit, return from main, _exit or _Exit) its streams are shut down as by posix_trace_shutdown: the log is complete with every event recorded before.
 * where: exit(), _exit(), DESCRIPTION (Trace option); posix_trace_shutdown(), DESCRIPTION
 * option: TRL
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
static pid_t spawn_controller(const char *name, int n, void (*end)(void)) {
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

static void do_exit(void) { exit(0); }
static void do__exit(void) { _exit(0); }
static void do__Exit(void) { _Exit(0); }
int main(void) {
    void (*ends[])(void) = {do_exit, do__exit, do__Exit};
    const char *names[] = {"exit.log", "_exit.log", "_Exit.log"};
    for (int i = 0; i < 3; i++) {
        int st;
        waitpid(spawn_controller(names[i], 100, ends[i]), &st, 0);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        check_complete(names[i], 100);
    }
    return 0;
}
