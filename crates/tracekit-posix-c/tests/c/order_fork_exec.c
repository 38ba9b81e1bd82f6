/* Time order across fork and exec: the controller's main thread, a forked
 * child that shares the main thread's lane and a forked-and-exec'd child
 * write into one inherited stream with a log at the same time. The log read back (by the test, tests/c_programs.rs) must hold
 * every event, each writer's in its own order, no record earlier than the
 * one before it.
 *
 *   order_fork_exec LOG PER_WRITER          (controller)
 *   order_fork_exec --child TAG PER_WRITER  (what the exec'd child runs)
 *
 * A writer's lane is (pthread_self() >> 12) + getpid() modulo the number of
 * lanes (4 to 16, a power of two; `lane_for` in tracekit-posix): a child
 * forked by the main thread keeps its pthread_self(), so a child whose pid
 * is congruent to its parent's modulo 16 writes into the main thread's lane
 * whatever the lane count. Children until then exit at once. */
#include <fcntl.h>
#include <unistd.h>
#include <sys/wait.h>
#include "check.h"

enum { MAIN, FORKED, EXECED, WRITERS };

static trace_event_id_t id;
static unsigned long per;

static void burst(unsigned tag) {
    for (unsigned long i = 0; i < per; i++) {
        unsigned p[2] = { tag, (unsigned)i };
        posix_trace_event(id, p, sizeof p);
    }
}

/* Forks a child that shares the calling thread's lane; it runs `child`. */
static pid_t fork_in_my_lane(void (*child)(void)) {
    for (int tries = 0; tries < 1000; tries++) {
        pid_t k = fork();
        CHECK(k >= 0);
        if (k == 0) {
            if ((getpid() - getppid()) % 16 != 0) _exit(0);
            child();
            _exit(0);
        }
        if ((k - getpid()) % 16 == 0) return k;
        int st; CHECK(waitpid(k, &st, 0) == k);
    }
    CHECK(!"no child pid congruent to ours in 1000 forks");
    return -1;
}

static void forked_child(void) { burst(FORKED); }

int main(int argc, char **argv) {
    if (argc == 4 && !strcmp(argv[1], "--child")) {
        /* The exec'd child: traced into the inherited stream again. */
        per = strtoul(argv[3], NULL, 10);
        OK(posix_trace_eventid_open("order", &id));
        burst((unsigned)atoi(argv[2]));
        return 0;
    }
    CHECK(argc == 3);
    per = strtoul(argv[2], NULL, 10);
    int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0);
    trace_attr_t attr; trace_id_t trid;
    OK(posix_trace_attr_init(&attr));
    OK(posix_trace_attr_setinherited(&attr, POSIX_TRACE_INHERITED));
    OK(posix_trace_attr_setlogfullpolicy(&attr, POSIX_TRACE_APPEND));
    OK(posix_trace_attr_setstreamsize(&attr, 1 << 20));
    OK(posix_trace_create_withlog(0, &attr, fd, &trid));
    OK(posix_trace_eventid_open("order", &id));
    OK(posix_trace_start(trid));

    pid_t execed = fork();
    CHECK(execed >= 0);
    if (execed == 0) {
        char t[16], n[32];
        snprintf(t, sizeof t, "%d", EXECED);
        snprintf(n, sizeof n, "%lu", per);
        execl("/proc/self/exe", argv[0], "--child", t, n, (char *)NULL);
        _exit(9);
    }
    pid_t forked = fork_in_my_lane(forked_child);
    burst(MAIN);
    pid_t kids[2] = { execed, forked };
    for (int k = 0; k < 2; k++) {
        int st; CHECK(waitpid(kids[k], &st, 0) == kids[k]);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    OK(posix_trace_shutdown(trid));
    printf("order_fork_exec ok: main %d, forked %d, exec'd %d\n", (int)getpid(), (int)forked, (int)execed);
    return 0;
}
