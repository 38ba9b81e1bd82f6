/* shall: The getnext functions report the events of a stream oldest first, in the order they were generated, each once.
 * where: posix_trace_getnext_event(), DESCRIPTION; §2.11.1.3 posix_timestamp
 * option: TRC
 */
#include "conformance.h"

#define N 2000
int main(void) {
    trace_id_t t; trace_event_id_t id; tk_event *e = malloc((N + 8) * sizeof *e);
    OK(posix_trace_create(0, NULL, &t));
    OK(posix_trace_eventid_open("ordered", &id));
    OK(posix_trace_start(t));
    for (int i = 0; i < N; i++) posix_trace_event(id, &i, sizeof i);
    int n = tk_read(t, 1, e, N + 8);
    EQ(e[0].id, POSIX_TRACE_START);
    tk_check_sequence(e, n, id, N);
    tk_check_time_order(e, n);
    EQ(tk_read(t, 1, e, N + 8), 0);
    OK(posix_trace_shutdown(t));
    return 0;
}
