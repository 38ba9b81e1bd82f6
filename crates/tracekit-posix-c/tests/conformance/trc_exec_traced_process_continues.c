/* shall: A traced process that calls exec goes on being traced into the same stream, but the new image does not inherit the name-to-id mapping: it maps its names again.
 * where: exec, DESCRIPTION (Trace option)
 * option: TRC
 */
#include "conformance.h"

int main(int argc, char **argv) {
    trace_event_id_t id;
    if (argc > 2) { /* the new image */
        OK(posix_trace_eventid_open("after-exec", &id));
        posix_trace_event(id, "b", 1);
        return 0;
    }
    if (argc > 1) { /* the traced process */
        char c; if (read(0, &c, 1) != 1) return 2;
        OK(posix_trace_eventid_open("before-exec", &id));
        posix_trace_event(id, "a", 1);
        execl(argv[0], argv[0], "traced", "again", (char *)NULL);
        return 3;
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
    int n = tk_read(t, 1, e, 32);
    const char *want[] = {"before-exec", "after-exec"}; int k = 0;
    for (int i = 0; i < n; i++) {
        if (e[i].id < 1024) continue;
        CHECK(k < 2);
        EQ(e[i].pid, p);
        OK(posix_trace_eventid_get_name(t, e[i].id, name));
        if (strcmp(name, want[k]) != 0) FAIL("event %d is %s, expected %s", k, name, want[k]);
        k++;
    }
    EQ(k, 2);
    OK(posix_trace_shutdown(t));
    return 0;
}
