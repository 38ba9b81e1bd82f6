/* shall: When a controller calls an exec function its streams are shut down as by posix_trace_shutdown: the log is complete, with every event recorded before the exec, as soon as the new image runs.
 * where: exec, DESCRIPTION (Trace option: a controller's streams are shut down as by posix_trace_shutdown); posix_trace_shutdown(), DESCRIPTION
 * option: TRL
 * deviation: The exec functions are wrapped by the library (linked before libc): a program that reaches the exec system call another way (syscall(2), a static libc) leaves the shutdown to the stream's keeper process, which completes the log shortly after.
 */
#include "conformance.h"

static void do_exec(void) { execl("/bin/true", "true", (char *)NULL); }
static void do_execvp(void) { char *argv[] = {"true", NULL}; execvp("true", argv); }
int main(void) {
    EQ(tk_wait(tk_fork(tk_log_controller, &(struct tk_controller){"execl.log", 10, do_exec})), 0);
    tk_check_complete_log("execl.log", 10); /* at once: no waiting for anyone */
    EQ(tk_wait(tk_fork(tk_log_controller, &(struct tk_controller){"execvp.log", 1000, do_execvp})), 0);
    tk_check_complete_log("execvp.log", 1000);
    return 0;
}
