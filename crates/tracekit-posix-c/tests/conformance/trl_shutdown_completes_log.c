/* shall: posix_trace_shutdown of a stream with log flushes what is left, writes the attributes, the event-type mapping and the status, and returns once done; posix_trace_open then validates the file and gives them back.
 * where: posix_trace_shutdown(), DESCRIPTION (with log)
 * option: TRL
 */
#include "conformance.h"

int main(void) {
    trace_attr_t a, got; trace_id_t t, lt; trace_event_id_t id; tk_event e[64]; char s[TRACE_EVENT_NAME_MAX + 1];
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_setname(&a, "complete"));
    OK(posix_trace_create_withlog(0, &a, tk_log_fd("complete.log"), &t));
    OK(posix_trace_eventid_open("logged", &id));
    OK(posix_trace_start(t));
    for (int i = 0; i < 10; i++) posix_trace_event(id, &i, sizeof i);
    OK(posix_trace_shutdown(t));
    int n = tk_read_log("complete.log", e, 64, &lt);
    tk_check_sequence(e, n, id, 10);
    OK(posix_trace_attr_init(&got)); OK(posix_trace_get_attr(lt, &got));
    OK(posix_trace_attr_getname(&got, s)); CHECK(strcmp(s, "complete") == 0);
    OK(posix_trace_eventid_get_name(lt, id, s)); CHECK(strcmp(s, "logged") == 0);
    struct posix_trace_status_info st = tk_status(lt);
    EQ(st.posix_stream_status, POSIX_TRACE_SUSPENDED);
    EQ(st.posix_stream_flush_status, POSIX_TRACE_NOT_FLUSHING);
    OK(posix_trace_close(lt));
    return 0;
}
