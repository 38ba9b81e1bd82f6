/* Analyzer in another process: open the log argv[1] and check it. */
#include <fcntl.h>
#include "check.h"

int main(int argc, char **argv) {
    CHECK(argc == 2);
    int fd = open(argv[1], O_RDONLY);
    CHECK(fd >= 0);
    trace_id_t trid;
    OK(posix_trace_open(fd, &trid));
    trace_attr_t attr; char name[TRACE_NAME_MAX + 1];
    OK(posix_trace_attr_init(&attr)); OK(posix_trace_get_attr(trid, &attr));
    OK(posix_trace_attr_getname(&attr, name)); CHECK(strcmp(name, "logtest") == 0);
    int pol; OK(posix_trace_attr_getlogfullpolicy(&attr, &pol)); CHECK(pol == POSIX_TRACE_APPEND);
    for (int pass = 0; pass < 2; pass++) {
        struct posix_trace_event_info ev; int v; size_t len; int unavail; int next = 0;
        char ename[TRACE_EVENT_NAME_MAX + 1];
        for (;;) {
            OK(posix_trace_getnext_event(trid, &ev, &v, sizeof v, &len, &unavail));
            if (unavail) break;
            OK(posix_trace_eventid_get_name(trid, ev.posix_event_id, ename));
            if (strcmp(ename, "tick") && strcmp(ename, "tock")) continue;
            CHECK(len == sizeof v && v == next);
            CHECK(strcmp(ename, v % 2 ? "tock" : "tick") == 0);
            next++;
        }
        CHECK(next == 1000);
        OK(posix_trace_rewind(trid));
    }
    struct posix_trace_event_info ev; char b[4]; size_t len; int unavail;
    CHECK(posix_trace_trygetnext_event(trid, &ev, b, 4, &len, &unavail) == EINVAL);
    CHECK(posix_trace_start(trid) == EINVAL);
    OK(posix_trace_close(trid));
    puts("log_read ok");
    return 0;
}
