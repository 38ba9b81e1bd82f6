/* shall: A destroyed attributes object is unusable until initialised again (tracekit detects the use: EINVAL); posix_trace_attr_init makes it usable again.
 * where: posix_trace_attr_destroy(), DESCRIPTION and ERRORS (may fail EINVAL)
 * option: TRC
 */
#include "conformance.h"

int main(void) {
    trace_attr_t a; char s[TRACE_NAME_MAX + 1]; trace_id_t t;
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_destroy(&a));
    ERR(posix_trace_attr_getname(&a, s), EINVAL);
    ERR(posix_trace_create(0, &a, &t), EINVAL);
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_getname(&a, s));
    return 0;
}
