/* shall: stream-min-size and max-data-size are read back as set, and a stream created with them reports them through posix_trace_get_attr.
 * where: posix_trace_attr_getstreamsize()/setstreamsize(), getmaxdatasize()/setmaxdatasize(), DESCRIPTION
 * option: TRC
 */
#include "conformance.h"

int main(void) {
    trace_attr_t a, got; size_t sz; trace_id_t t;
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_setstreamsize(&a, 100000));
    OK(posix_trace_attr_getstreamsize(&a, &sz)); EQ(sz, 100000);
    OK(posix_trace_attr_setmaxdatasize(&a, 100));
    OK(posix_trace_attr_getmaxdatasize(&a, &sz)); EQ(sz, 100);
    OK(posix_trace_create(0, &a, &t));
    OK(posix_trace_attr_init(&got));
    OK(posix_trace_get_attr(t, &got));
    OK(posix_trace_attr_getstreamsize(&got, &sz)); EQ(sz, 100000);
    OK(posix_trace_attr_getmaxdatasize(&got, &sz)); EQ(sz, 100);
    OK(posix_trace_shutdown(t));
    return 0;
}
