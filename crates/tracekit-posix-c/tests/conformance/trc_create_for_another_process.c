/* shall: A controller can create a stream for another process: that process's events are recorded into it, with its pid.
 * where: posix_trace_create(), DESCRIPTION (pid)
 * option: TRC
 * deviation: The traced process attaches to a stream created for it on its next posix_trace_eventid_open (the stream is a /dev/shm file named after its pid); events it traced before that call are not recorded.
 */
#include "conformance.h"

int main(int argc, char **argv) {
    trace_event_id_t id;
    if (argc > 1) { /* the traced process */
        char c; if (read(0, &c, 1) != 1) return 2;
        OK(posix_trace_eventid_open("remote", &id));
        for (int i = 0; i < 10; i++) posix_trace_event(id, &i, sizeof i);
        return 0;
    }
    int go[2]; CHECK(pipe(go) == 0);
    fflush(NULL);
    pid_t p = fork();
    if (p == 0) { dup2(go[0], 0); execl(argv[0], argv[0], "traced", (char *)NULL); _exit(3); }
    trace_id_t t; tk_event e[32]; char name[TRACE_EVENT_NAME_MAX + 1];
    OK(posix_trace_create(p, NULL, &t));
    OK(posix_trace_start(t));
    CHECK(write(go[1], "g", 1) == 1);
    int st; waitpid(p, &st, 0); CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    int n = tk_read(t, 1, e, 32), k = 0;
    for (int i = 0; i < n; i++) {
        if (e[i].id < 1024) continue;
        EQ(e[i].pid, p);
        OK(posix_trace_eventid_get_name(t, e[i].id, name)); CHECK(strcmp(name, "remote") == 0);
        k++;
    }
    EQ(k, 10);
    OK(posix_trace_shutdown(t));
    return 0;
}
