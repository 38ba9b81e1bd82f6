/* Prints the layouts and constants the header gives, for comparison with
 * the library's own values. */
#include <stddef.h>
#include "check.h"

#define P(x) printf("%s %ld\n", #x, (long)(x))
int main(void) {
    P(sizeof(trace_attr_t)); P(_Alignof(trace_attr_t));
    P(sizeof(trace_event_set_t)); P(sizeof(trace_id_t)); P(sizeof(trace_event_id_t));
    P(sizeof(struct posix_trace_status_info));
    P(offsetof(struct posix_trace_status_info, posix_log_full_status));
    P(sizeof(struct posix_trace_event_info));
    P(offsetof(struct posix_trace_event_info, posix_pid));
    P(offsetof(struct posix_trace_event_info, posix_prog_address));
    P(offsetof(struct posix_trace_event_info, posix_truncation_status));
    P(offsetof(struct posix_trace_event_info, posix_timestamp));
    P(offsetof(struct posix_trace_event_info, posix_thread_id));
    P(_POSIX_TRACE); P(_POSIX_TRACE_EVENT_FILTER); P(_POSIX_TRACE_LOG); P(_POSIX_TRACE_INHERIT);
    P(TRACE_EVENT_NAME_MAX); P(TRACE_NAME_MAX); P(TRACE_SYS_MAX); P(TRACE_USER_EVENT_MAX);
    P(POSIX_TRACE_SUSPENDED); P(POSIX_TRACE_RUNNING); P(POSIX_TRACE_NOT_FULL); P(POSIX_TRACE_FULL);
    P(POSIX_TRACE_NO_OVERRUN); P(POSIX_TRACE_OVERRUN); P(POSIX_TRACE_NOT_FLUSHING); P(POSIX_TRACE_FLUSHING);
    P(POSIX_TRACE_LOOP); P(POSIX_TRACE_UNTIL_FULL); P(POSIX_TRACE_FLUSH); P(POSIX_TRACE_APPEND);
    P(POSIX_TRACE_CLOSE_FOR_CHILD); P(POSIX_TRACE_INHERITED);
    P(POSIX_TRACE_NOT_TRUNCATED); P(POSIX_TRACE_TRUNCATED_RECORD); P(POSIX_TRACE_TRUNCATED_READ);
    P(POSIX_TRACE_WOPID_EVENTS); P(POSIX_TRACE_SYSTEM_EVENTS); P(POSIX_TRACE_ALL_EVENTS);
    P(POSIX_TRACE_SET_EVENTSET); P(POSIX_TRACE_ADD_EVENTSET); P(POSIX_TRACE_SUB_EVENTSET);
    P(POSIX_TRACE_ERROR); P(POSIX_TRACE_START); P(POSIX_TRACE_STOP); P(POSIX_TRACE_OVERFLOW);
    P(POSIX_TRACE_RESUME); P(POSIX_TRACE_FILTER); P(POSIX_TRACE_FLUSH_START); P(POSIX_TRACE_FLUSH_STOP);
    P(POSIX_TRACE_UNNAMED_USEREVENT); P(POSIX_TRACE_UNNAMED_USER_EVENT);
    return 0;
}
