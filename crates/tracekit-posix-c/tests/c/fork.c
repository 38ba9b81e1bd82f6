/* Inheritance across fork (TRI): an inherited stream records the child's
 * events with the child's pid; CLOSE_FOR_CHILD records none of them; the
 * controller's trid is not valid in the child. */
#include <sys/wait.h>
#include "check.h"

static int run(int inherit) {
    trace_attr_t attr; trace_id_t trid; trace_event_id_t id;
    OK(posix_trace_attr_init(&attr));
    OK(posix_trace_attr_setinherited(&attr, inherit));
    OK(posix_trace_create(0, &attr, &trid));
    OK(posix_trace_eventid_open("fork-test", &id));
    OK(posix_trace_start(trid));
    posix_trace_event(id, "parent", 6);
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        posix_trace_event(id, "child", 5);
        struct posix_trace_status_info st;
        _exit(posix_trace_get_status(trid, &st) == EINVAL ? 0 : 3);
    }
    int status; CHECK(waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    posix_trace_event(id, "parent2", 7);
    OK(posix_trace_stop(trid));
    struct posix_trace_event_info ev; char buf[32]; size_t len; int unavail; int childs = 0, parents = 0;
    for (;;) {
        OK(posix_trace_trygetnext_event(trid, &ev, buf, sizeof buf, &len, &unavail));
        if (unavail) break;
        if (ev.posix_event_id != id) continue;
        if (ev.posix_pid == child) { CHECK(len == 5 && !memcmp(buf, "child", 5)); childs++; }
        else { CHECK(ev.posix_pid == getpid()); parents++; }
    }
    CHECK(parents == 2);
    OK(posix_trace_shutdown(trid));
    return childs;
}

int main(void) {
    CHECK(run(POSIX_TRACE_INHERITED) == 1);
    CHECK(run(POSIX_TRACE_CLOSE_FOR_CHILD) == 0);
    puts("fork ok");
    return 0;
}
