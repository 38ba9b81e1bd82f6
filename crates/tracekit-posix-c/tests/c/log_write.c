/* Controller + traced process: record 1000 events into the log argv[1]. */
#include <fcntl.h>
#include "check.h"

int main(int argc, char **argv) {
    CHECK(argc == 2);
    int fd = open(argv[1], O_CREAT | O_TRUNC | O_RDWR, 0644);
    CHECK(fd >= 0);
    trace_attr_t attr; trace_id_t trid; trace_event_id_t tick, tock;
    OK(posix_trace_attr_init(&attr));
    OK(posix_trace_attr_setname(&attr, "logtest"));
    OK(posix_trace_attr_setlogfullpolicy(&attr, POSIX_TRACE_APPEND));
    OK(posix_trace_create_withlog(0, &attr, fd, &trid));
    OK(posix_trace_eventid_open("tick", &tick));
    OK(posix_trace_trid_eventid_open(trid, "tock", &tock));
    OK(posix_trace_start(trid));
    for (int i = 0; i < 1000; i++) posix_trace_event(i % 2 ? tock : tick, &i, sizeof i);
    OK(posix_trace_flush(trid));
    struct posix_trace_status_info st;
    do { OK(posix_trace_get_status(trid, &st)); } while (st.posix_stream_flush_status == POSIX_TRACE_FLUSHING);
    CHECK(st.posix_stream_flush_error == 0);
    OK(posix_trace_shutdown(trid));
    close(fd);
    puts("log_write ok");
    return 0;
}
