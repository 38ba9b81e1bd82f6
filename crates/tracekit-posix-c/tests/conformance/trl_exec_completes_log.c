/* shall: When a controller calls an exec function its streams are shut down as by posix_trace_shutdown: the log is complete, with every event recorded before the exec, as soon as the new image runs.
 * where: exec, DESCRIPTION (Trace option: a controller's streams are shut down as by posix_trace_shutdown); posix_trace_shutdown(), DESCRIPTION
 * option: TRL
 * deviation: The exec functions are wrapped by the library (linked before libc): a program that reaches the exec system call another way (syscall(2), a static libc) leaves the shutdown to the stream's keeper process, which completes the log shortly after.
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

static void do_exec(void) { execl("/bin/true", "true", (char *)NULL); }
static void do_execvp(void) { char *argv[] = {"true", NULL}; execvp("true", argv); }
int main(void) {
    int st;
    waitpid(spawn_controller("execl.log", 10, do_exec), &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    check_complete("execl.log", 10); /* at once: no waiting for anyone */
    waitpid(spawn_controller("execvp.log", 1000, do_execvp), &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    check_complete("execvp.log", 1000);
    return 0;
}
