/* shall: The controller operations (start, stop, clear, flush, shutdown, set_filter, get_filter) and posix_trace_trygetnext_event fail with EINVAL on the identifier of an opened log, and the log stays readable.
 * where: §2.11 (functions valid per identifier); posix_trace_start(), stop(), clear(), flush(), shutdown(), set_filter(), get_filter(), trygetnext_event(), ERRORS (EINVAL)
 * option: TRL
 */
#include "conformance.h"

int main(void) {
    trace_id_t t, lt; trace_event_id_t id; tk_event e[64], f[64]; trace_event_set_t s;
    struct posix_trace_event_info ev; char buf[8]; size_t len; int un;
    OK(posix_trace_create_withlog(0, NULL, tk_log_fd("notstream.log"), &t));
    OK(posix_trace_eventid_open("still-readable", &id));
    OK(posix_trace_start(t));
    for (int i = 0; i < 10; i++) posix_trace_event(id, &i, sizeof i);
    OK(posix_trace_shutdown(t));
    int n = tk_read_log("notstream.log", e, 64, &lt);
    OK(posix_trace_eventset_empty(&s));
    ERR(posix_trace_start(lt), EINVAL);
    ERR(posix_trace_stop(lt), EINVAL);
    ERR(posix_trace_clear(lt), EINVAL);
    ERR(posix_trace_flush(lt), EINVAL);
    ERR(posix_trace_shutdown(lt), EINVAL);
    ERR(posix_trace_set_filter(lt, &s, POSIX_TRACE_SET_EVENTSET), EINVAL);
    ERR(posix_trace_get_filter(lt, &s), EINVAL);
    ERR(posix_trace_trygetnext_event(lt, &ev, buf, sizeof buf, &len, &un), EINVAL);
    OK(posix_trace_rewind(lt));
    EQ(tk_read(lt, 0, f, 64), n);
    tk_check_sequence(f, n, id, 10);
    OK(posix_trace_close(lt));
    return 0;
}
