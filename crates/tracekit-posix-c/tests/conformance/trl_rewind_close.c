/* shall: posix_trace_rewind moves the read position of an opened log back to its oldest event; posix_trace_close frees the identifier, which is then invalid (EINVAL).
 * where: posix_trace_rewind(), posix_trace_close(), DESCRIPTION and ERRORS
 * option: TRL
 */
#include "conformance.h"

int main(void) {
    trace_id_t t, lt; trace_event_id_t id; tk_event e[64], f[64];
    OK(posix_trace_create_withlog(0, NULL, tk_log_fd("rewind.log"), &t));
    OK(posix_trace_eventid_open("rewound", &id));
    OK(posix_trace_start(t));
    for (int i = 0; i < 10; i++) posix_trace_event(id, &i, sizeof i);
    OK(posix_trace_shutdown(t));
    int n = tk_read_log("rewind.log", e, 64, &lt);
    EQ(tk_read(lt, 0, f, 64), 0);
    OK(posix_trace_rewind(lt));
    EQ(tk_read(lt, 0, f, 64), n);
    for (int i = 0; i < n; i++) { EQ(f[i].id, e[i].id); EQ(f[i].ts, e[i].ts); }
    OK(posix_trace_close(lt));
    ERR(posix_trace_close(lt), EINVAL);
    ERR(posix_trace_rewind(lt), EINVAL);
    return 0;
}
