/* shall: The options are announced as 200809L, the limits are at least the POSIX minimums ({_POSIX_TRACE_EVENT_NAME_MAX} 30, {_POSIX_TRACE_NAME_MAX} 8, {_POSIX_TRACE_SYS_MAX} 8, {_POSIX_TRACE_USER_EVENT_MAX} 32), and both spellings of the unnamed user event are one value.
 * where: <unistd.h> _POSIX_TRACE*, <limits.h> trace limits, <trace.h> POSIX_TRACE_UNNAMED_USER_EVENT
 * option: TRC
 */
#include "conformance.h"

#if _POSIX_TRACE != 200809L || _POSIX_TRACE_EVENT_FILTER != 200809L || _POSIX_TRACE_LOG != 200809L || _POSIX_TRACE_INHERIT != 200809L
#error options
#endif
int main(void) {
    CHECK(TRACE_EVENT_NAME_MAX >= _POSIX_TRACE_EVENT_NAME_MAX && _POSIX_TRACE_EVENT_NAME_MAX == 30);
    CHECK(TRACE_NAME_MAX >= _POSIX_TRACE_NAME_MAX && _POSIX_TRACE_NAME_MAX == 8);
    CHECK(TRACE_SYS_MAX >= _POSIX_TRACE_SYS_MAX && _POSIX_TRACE_SYS_MAX == 8);
    CHECK(TRACE_USER_EVENT_MAX >= _POSIX_TRACE_USER_EVENT_MAX && _POSIX_TRACE_USER_EVENT_MAX == 32);
    EQ(POSIX_TRACE_UNNAMED_USER_EVENT, POSIX_TRACE_UNNAMED_USEREVENT);
    return 0;
}
