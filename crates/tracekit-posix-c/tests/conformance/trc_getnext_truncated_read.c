/* shall: When the reader's buffer is smaller than the data, num_bytes are copied, data_len is num_bytes and the status is POSIX_TRACE_TRUNCATED_READ, which overrides POSIX_TRACE_TRUNCATED_RECORD.
 * where: posix_trace_getnext_event(), DESCRIPTION; §2.11.1.3 posix_truncation_status
 * option: TRC
 */
#include "conformance.h"

int main(void) {
    trace_attr_t a; trace_id_t t; trace_event_id_t id; struct posix_trace_event_info ev;
    char buf[16]; size_t len; int un;
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_setmaxdatasize(&a, 8));
    OK(posix_trace_create(0, &a, &t));
    OK(posix_trace_eventid_open("read", &id));
    OK(posix_trace_start(t));
    posix_trace_event(id, "abcdef", 6);
    posix_trace_event(id, "0123456789", 10);
    OK(posix_trace_getnext_event(t, &ev, buf, sizeof buf, &len, &un)); EQ(ev.posix_event_id, POSIX_TRACE_START);
    OK(posix_trace_getnext_event(t, &ev, buf, 3, &len, &un));
    EQ(un, 0); EQ(len, 3); CHECK(memcmp(buf, "abc", 3) == 0);
    EQ(ev.posix_truncation_status, POSIX_TRACE_TRUNCATED_READ);
    OK(posix_trace_getnext_event(t, &ev, buf, 3, &len, &un));
    EQ(len, 3); EQ(ev.posix_truncation_status, POSIX_TRACE_TRUNCATED_READ);
    OK(posix_trace_shutdown(t));
    return 0;
}
