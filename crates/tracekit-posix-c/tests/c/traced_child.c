/* A traced process with no controller of its own: events go to the stream
 * named by TRACEKIT_POSIX_STREAM (set by a controller in another process). */
#include "check.h"

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 100;
    trace_event_id_t id;
    OK(posix_trace_eventid_open("child-event", &id));
    for (int i = 0; i < n; i++) posix_trace_event(id, &i, sizeof i);
    return 0;
}
