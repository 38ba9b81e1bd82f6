/* A traced program whose children outlive it: the parent writes one event
 * and exits at once (status 3); each of its two children waits until the
 * parent is gone, then writes PER events (payload: child number, sequence).
 * Run by a controller that passes the stream in TRACEKIT_POSIX_STREAM
 * (`tracekit posix record --inherit`).
 *
 *   outlive PER */
#include <unistd.h>
#include "check.h"

int main(int argc, char **argv) {
    CHECK(argc == 2);
    unsigned long per = strtoul(argv[1], NULL, 10);
    trace_event_id_t id;
    OK(posix_trace_eventid_open("outlive", &id));
    pid_t parent = getpid();
    for (unsigned k = 0; k < 2; k++) {
        pid_t c = fork();
        CHECK(c >= 0);
        if (c == 0) {
            while (getppid() == parent) usleep(1000);
            for (unsigned long i = 0; i < per; i++) {
                unsigned p[2] = { k, (unsigned)i };
                posix_trace_event(id, p, sizeof p);
            }
            _exit(0);
        }
    }
    posix_trace_event(id, "parent", 6);
    return 3;
}
