/* shall: When a controller exits (exit, return from main, _exit or _Exit) its streams are shut down as by posix_trace_shutdown: the log is complete with every event recorded before.
 * where: exit(), _exit(), DESCRIPTION (Trace option); posix_trace_shutdown(), DESCRIPTION
 * option: TRL
 */
#include "conformance.h"

static void do_exit(void) { exit(0); }
static void do__exit(void) { _exit(0); }
static void do__Exit(void) { _Exit(0); }
int main(void) {
    void (*ends[])(void) = {do_exit, do__exit, do__Exit};
    const char *names[] = {"exit.log", "_exit.log", "_Exit.log"};
    for (int i = 0; i < 3; i++) {
        EQ(tk_wait(tk_fork(tk_log_controller, &(struct tk_controller){names[i], 100, ends[i]})), 0);
        tk_check_complete_log(names[i], 100);
    }
    return 0;
}
