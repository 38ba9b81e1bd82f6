/* shall: A controller terminated by a signal has its streams shut down too: the log is completed with every event recorded before the signal.
 * where: §2.4.3 Signal Actions (a process ended by a signal's default action has the consequences of _exit()); _exit(), DESCRIPTION (Trace option)
 * option: TRL
 * deviation: No code of a process runs after a fatal signal: the stream's keeper (a small process forked when the stream was created) sees the controller go and completes the log shortly after, from where the controller's last flush left it (the STOP, FLUSH_START and FLUSH_STOP it records carry the keeper's pid).
 */
#include "conformance.h"

static int ready_fd;
static void do_wait(void) { CHECK(write(ready_fd, "ready\n", 6) == 6); for (;;) pause(); }
int main(void) {
    int sigs[] = {SIGKILL, SIGTERM, SIGSEGV};
    const char *names[] = {"kill.log", "term.log", "segv.log"};
    for (int i = 0; i < 3; i++) {
        int out[2]; CHECK(pipe(out) == 0);
        ready_fd = out[1];
        pid_t p = tk_fork(tk_log_controller, &(struct tk_controller){names[i], 500, do_wait});
        char line[16] = {0};
        CHECK(read(out[0], line, sizeof line - 1) > 0 && strcmp(line, "ready\n") == 0);
        kill(p, sigs[i]);
        EQ(tk_wait(p), 128 + sigs[i]);
        tk_wait_complete(names[i]);
        tk_check_complete_log(names[i], 500);
    }
    return 0;
}
