/* shall: posix_trace_create with a null attr uses the default attributes.
 * where: posix_trace_create(), DESCRIPTION
 * option: TRC
 */
#include "conformance.h"

int main(void) {
    trace_attr_t got, def; trace_id_t t; int pol, defpol; size_t sz, defsz;
    OK(posix_trace_create(0, NULL, &t));
    OK(posix_trace_attr_init(&got)); OK(posix_trace_attr_init(&def));
    OK(posix_trace_get_attr(t, &got));
    OK(posix_trace_attr_getstreamfullpolicy(&got, &pol));
    OK(posix_trace_attr_getstreamfullpolicy(&def, &defpol)); EQ(pol, defpol);
    OK(posix_trace_attr_getmaxdatasize(&got, &sz));
    OK(posix_trace_attr_getmaxdatasize(&def, &defsz)); EQ(sz, defsz);
    OK(posix_trace_shutdown(t));
    return 0;
}
