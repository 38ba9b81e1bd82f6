/* A controller that never calls posix_trace_shutdown and whose image goes
 * away without running exit handlers: argv[2] "exec" execs /bin/true,
 * "kill" prints "ready" and waits to be killed. It creates a stream with
 * log argv[1] (100 events of type "before-exec", payload 0..99) and a
 * stream for its parent, which lives in a named /dev/shm file. The
 * standard shuts both down; the test checks the log and the file. */
#include <fcntl.h>
#include <unistd.h>
#include "check.h"

int main(int argc, char **argv) {
    CHECK(argc == 3);
    int fd = open(argv[1], O_CREAT | O_TRUNC | O_RDWR, 0644);
    CHECK(fd >= 0);
    trace_id_t trid, named; trace_event_id_t id;
    OK(posix_trace_create_withlog(0, NULL, fd, &trid));
    OK(posix_trace_create(getppid(), NULL, &named));
    OK(posix_trace_eventid_open("before-exec", &id));
    OK(posix_trace_start(trid));
    for (int i = 0; i < 100; i++) posix_trace_event(id, &i, sizeof i);
    if (strcmp(argv[2], "exec") == 0) {
        execl("/bin/true", "true", (char *)NULL);
        perror("execl");
        return 1;
    }
    CHECK(strcmp(argv[2], "kill") == 0);
    printf("ready\n");
    fflush(stdout);
    for (;;) pause();
}
