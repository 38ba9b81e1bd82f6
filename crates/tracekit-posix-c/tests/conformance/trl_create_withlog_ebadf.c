/* shall: posix_trace_create_withlog fails with EBADF when file_desc is not a valid descriptor open for writing.
 * where: posix_trace_create_withlog(), ERRORS (EBADF)
 * option: TRL
 */
#include "conformance.h"

int main(void) {
    trace_id_t t;
    ERR(posix_trace_create_withlog(0, NULL, -1, &t), EBADF);
    ERR(posix_trace_create_withlog(0, NULL, 9999, &t), EBADF);
    close(tk_log_fd("ro.log"));
    int ro = open(tk_path("ro.log"), O_RDONLY); CHECK(ro >= 0);
    ERR(posix_trace_create_withlog(0, NULL, ro, &t), EBADF);
    return 0;
}
