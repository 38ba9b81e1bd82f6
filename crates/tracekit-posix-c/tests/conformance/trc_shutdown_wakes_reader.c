/* shall: Threads blocked in posix_trace_getnext_event on a stream that is shut down return with EINVAL.
 * where: posix_trace_shutdown(), DESCRIPTION
 * option: TRC
 */
#include "conformance.h"

static trace_id_t t;
static int result = -1;
static void *reader(void *arg) {
    (void)arg; struct posix_trace_event_info ev; char buf[8]; size_t len; int un;
    result = posix_trace_getnext_event(t, &ev, buf, sizeof buf, &len, &un);
    return NULL;
}
int main(void) {
    pthread_t th;
    OK(posix_trace_create(0, NULL, &t));
    pthread_create(&th, NULL, reader, NULL);
    usleep(50000);
    OK(posix_trace_shutdown(t));
    pthread_join(th, NULL);
    EQ(result, EINVAL);
    return 0;
}
