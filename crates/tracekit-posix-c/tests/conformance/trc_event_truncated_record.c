/* shall: Data longer than max-data-size is truncated when the event is recorded, and the event reads back with POSIX_TRACE_TRUNCATED_RECORD.
 * where: posix_trace_event(), DESCRIPTION; posix_trace_attr_setmaxdatasize(); §2.11.1.3 posix_truncation_status
 * option: TRC
 */
#include "conformance.h"

int main(void) {
    trace_attr_t a; trace_id_t t; tk_event e[4]; trace_event_id_t id;
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_setmaxdatasize(&a, 8));
    OK(posix_trace_create(0, &a, &t));
    OK(posix_trace_eventid_open("long", &id));
    OK(posix_trace_start(t));
    posix_trace_event(id, "0123456789abcdef", 16);
    int n = tk_read(t, 1, e, 4);
    int i = tk_index(e, n, id); CHECK(i >= 0);
    EQ(e[i].len, 8); CHECK(memcmp(e[i].data, "01234567", 8) == 0);
    EQ(e[i].trunc, POSIX_TRACE_TRUNCATED_RECORD);
    OK(posix_trace_shutdown(t));
    return 0;
}
