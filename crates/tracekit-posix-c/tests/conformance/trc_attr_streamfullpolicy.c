/* shall: The stream-full-policy attribute takes POSIX_TRACE_LOOP and POSIX_TRACE_UNTIL_FULL and is read back as set; any other value is refused with EINVAL.
 * where: posix_trace_attr_getstreamfullpolicy()/setstreamfullpolicy(), DESCRIPTION and ERRORS
 * option: TRC
 */
#include "conformance.h"

int main(void) {
    trace_attr_t a; int pol;
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_setstreamfullpolicy(&a, POSIX_TRACE_UNTIL_FULL));
    OK(posix_trace_attr_getstreamfullpolicy(&a, &pol)); EQ(pol, POSIX_TRACE_UNTIL_FULL);
    OK(posix_trace_attr_setstreamfullpolicy(&a, POSIX_TRACE_LOOP));
    OK(posix_trace_attr_getstreamfullpolicy(&a, &pol)); EQ(pol, POSIX_TRACE_LOOP);
    ERR(posix_trace_attr_setstreamfullpolicy(&a, 4242), EINVAL);
    OK(posix_trace_attr_getstreamfullpolicy(&a, &pol)); EQ(pol, POSIX_TRACE_LOOP);
    return 0;
}
