/* shall: The controller maps a name for the traced processes of a stream with posix_trace_trid_eventid_open; the traced process that opens the same name gets the same identifier, so the controller can filter it in advance.
 * where: posix_trace_trid_eventid_open(), DESCRIPTION
 * option: TEF
 */
#include "conformance.h"

int main(int argc, char **argv) {
    trace_event_id_t id;
    if (argc > 1) {
        char c; if (read(0, &c, 1) != 1) return 2;
        OK(posix_trace_eventid_open("shared-name", &id));
        posix_trace_event(id, "filtered", 8);
        OK(posix_trace_eventid_open("other-name", &id));
        posix_trace_event(id, "kept", 4);
        return 0;
    }
    int go[2]; CHECK(pipe(go) == 0);
    fflush(NULL);
    pid_t p = fork();
    if (p == 0) { dup2(go[0], 0); execl(argv[0], argv[0], "traced", (char *)NULL); _exit(3); }
    trace_id_t t; trace_event_set_t s; tk_event e[16]; char name[TRACE_EVENT_NAME_MAX + 1];
    OK(posix_trace_create(p, NULL, &t));
    OK(posix_trace_trid_eventid_open(t, "shared-name", &id));
    OK(posix_trace_eventid_get_name(t, id, name)); CHECK(strcmp(name, "shared-name") == 0);
    OK(posix_trace_eventset_empty(&s)); OK(posix_trace_eventset_add(id, &s));
    OK(posix_trace_set_filter(t, &s, POSIX_TRACE_SET_EVENTSET));
    OK(posix_trace_start(t));
    CHECK(write(go[1], "g", 1) == 1);
    int st; waitpid(p, &st, 0); CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    int n = tk_read(t, 1, e, 16), user = 0;
    for (int i = 0; i < n; i++) if (e[i].id >= 1024) {
        user++; CHECK(e[i].id != id);
        OK(posix_trace_eventid_get_name(t, e[i].id, name)); CHECK(strcmp(name, "other-name") == 0);
    }
    EQ(user, 1);
    OK(posix_trace_shutdown(t));
    return 0;
}
