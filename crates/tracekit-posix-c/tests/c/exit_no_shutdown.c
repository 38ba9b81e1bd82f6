/* The controller exits without posix_trace_shutdown: the stream is shut
 * down at exit and the log argv[1] is complete. */
#include <fcntl.h>
#include "check.h"

int main(int argc, char **argv) {
    CHECK(argc == 2);
    int fd = open(argv[1], O_CREAT | O_TRUNC | O_RDWR, 0644);
    CHECK(fd >= 0);
    trace_id_t trid; trace_event_id_t id;
    OK(posix_trace_create_withlog(0, NULL, fd, &trid));
    OK(posix_trace_eventid_open("at-exit", &id));
    OK(posix_trace_start(trid));
    for (int i = 0; i < 100; i++) posix_trace_event(id, &i, sizeof i);
    exit(0);
}
