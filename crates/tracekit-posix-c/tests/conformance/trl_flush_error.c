/* shall: An error while flushing is kept in posix_stream_flush_error (the first one; reset after it is read) and shutdown reports it: EFBIG when the log would exceed the maximum file size.
 * where: §2.11.1.2 posix_stream_flush_error; posix_trace_flush()/shutdown(), ERRORS (EFBIG); §2.11.2.1 POSIX_TRACE_ERROR
 * option: TRL
 */
#include "conformance.h"

#include <sys/resource.h>
int main(void) {
    trace_attr_t a; trace_id_t t; trace_event_id_t id; char payload[200] = {0};
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_setlogfullpolicy(&a, POSIX_TRACE_APPEND));
    OK(posix_trace_create_withlog(0, &a, tk_log_fd("efbig.log"), &t));
    /* The maximum file size of this process, from now on. */
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = { 256 << 10, 256 << 10 };
    CHECK(setrlimit(RLIMIT_FSIZE, &rl) == 0);
    OK(posix_trace_eventid_open("big", &id));
    OK(posix_trace_start(t));
    for (int i = 0; i < 5000; i++) posix_trace_event(id, payload, sizeof payload);
    OK(posix_trace_flush(t));
    /* Every read resets the flush error: keep what the polls saw. */
    int err = 0; struct posix_trace_status_info st;
    do {
        usleep(1000);
        st = tk_status(t);
        if (st.posix_stream_flush_error && !err) err = st.posix_stream_flush_error;
    } while (st.posix_stream_flush_status == POSIX_TRACE_FLUSHING);
    EQ(err, EFBIG);
    EQ(tk_status(t).posix_stream_flush_error, 0);
    ERR(posix_trace_shutdown(t), EFBIG);
    return 0;
}
