/* shall: posix_trace_attr_setname sets the trace name, truncated to {TRACE_NAME_MAX} bytes when longer; posix_trace_attr_getname returns it NUL-terminated.
 * where: posix_trace_attr_getname()/setname(), DESCRIPTION
 * option: TRC
 */
#include "conformance.h"

int main(void) {
    trace_attr_t a; char s[TRACE_NAME_MAX + 1]; char longname[200];
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_setname(&a, "conform"));
    OK(posix_trace_attr_getname(&a, s)); CHECK(strcmp(s, "conform") == 0);
    memset(longname, 'n', sizeof longname - 1); longname[sizeof longname - 1] = 0;
    OK(posix_trace_attr_setname(&a, longname));
    OK(posix_trace_attr_getname(&a, s));
    CHECK(strlen(s) <= TRACE_NAME_MAX && strlen(s) >= TRACE_NAME_MAX - 1);
    CHECK(strncmp(s, longname, strlen(s)) == 0);
    return 0;
}
