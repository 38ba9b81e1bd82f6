/* shall: A stream created with a log and no explicit stream-full-policy has POSIX_TRACE_FLUSH; POSIX_TRACE_FLUSH is a valid stream-full-policy attribute.
 * where: posix_trace_create_withlog(), DESCRIPTION; posix_trace_attr_setstreamfullpolicy()
 * option: TRL
 */
#include "conformance.h"

int main(void) {
    trace_attr_t a, got; trace_id_t t; int pol;
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_create_withlog(0, &a, tk_log_fd("default.log"), &t));
    OK(posix_trace_attr_init(&got)); OK(posix_trace_get_attr(t, &got));
    OK(posix_trace_attr_getstreamfullpolicy(&got, &pol)); EQ(pol, POSIX_TRACE_FLUSH);
    OK(posix_trace_shutdown(t));
    OK(posix_trace_attr_setstreamfullpolicy(&a, POSIX_TRACE_FLUSH));
    OK(posix_trace_attr_getstreamfullpolicy(&a, &pol)); EQ(pol, POSIX_TRACE_FLUSH);
    return 0;
}
