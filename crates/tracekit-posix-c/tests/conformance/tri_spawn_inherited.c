/* shall: A child created by posix_spawn of a process traced into a POSIX_TRACE_INHERITED stream is traced into that stream.
 * where: posix_spawn(), DESCRIPTION (Trace Inherit option)
 * option: TRI
 * deviation: As for exec: the wrapper of posix_spawn passes the stream open and names it in the child's environment. glibc's system() and popen() spawn through glibc-internal calls that no library can wrap: their children are not traced.
 */
#include "conformance.h"

static trace_id_t inherited_stream(int policy, const char *log) {
    trace_attr_t a; trace_id_t t;
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_setinherited(&a, policy));
    if (log) OK(posix_trace_create_withlog(0, &a, tk_log_fd(log), &t));
    else OK(posix_trace_create(0, &a, &t));
    OK(posix_trace_start(t));
    return t;
}

#include <spawn.h>
extern char **environ;
int main(int argc, char **argv) {
    trace_event_id_t id; tk_event e[64];
    if (argc > 1) {
        OK(posix_trace_eventid_open("spawned", &id));
        posix_trace_event(id, "s", 1);
        return 0;
    }
    trace_id_t t = inherited_stream(POSIX_TRACE_INHERITED, NULL);
    char *cargv[] = {argv[0], "child", NULL}; pid_t p; int st;
    OK(posix_spawn(&p, argv[0], NULL, NULL, cargv, environ));
    waitpid(p, &st, 0); CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    int n = tk_read(t, 1, e, 64), k = 0;
    for (int i = 0; i < n; i++) k += e[i].id >= 1024 && e[i].pid == p;
    EQ(k, 1);
    OK(posix_trace_shutdown(t));
    return 0;
}
