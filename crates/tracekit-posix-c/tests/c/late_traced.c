/* Waits for a line on stdin, then emits events: a controller in another
 * process creates a stream for this pid in the meantime. */
#include "check.h"

int main(void) {
    char line[16];
    CHECK(fgets(line, sizeof line, stdin) != NULL);
    trace_event_id_t id;
    OK(posix_trace_eventid_open("late", &id));
    for (int i = 0; i < 10; i++) posix_trace_event(id, &i, sizeof i);
    return 0;
}
