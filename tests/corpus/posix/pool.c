/* A small traced program for the POSIX trace corpus: a parent with three
 * worker threads handling "requests" in bursts (cache lookups, queries,
 * responses) and a forked child compacting a log. Events go to the stream
 * of `tracekit posix record` (TRACEKIT_POSIX_STREAM); see README.md. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <trace.h>
#include <unistd.h>

static trace_event_id_t ev_request, ev_hit, ev_miss, ev_query, ev_response, ev_compact;

static void pause_us(long us) {
    struct timespec t = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&t, NULL);
}

static void *worker(void *arg) {
    int w = (int)(long)arg;
    char buf[64];
    for (int burst = 0; burst < 6; burst++) {
        int n = 10 + 15 * ((burst + w) % 3);
        for (int i = 0; i < n; i++) {
            int len = snprintf(buf, sizeof buf, "GET /item/%d", burst * 100 + i);
            posix_trace_event(ev_request, buf, (size_t)len);
            if ((i + w) % 4 == 0) {
                posix_trace_event(ev_miss, &i, sizeof i);
                len = snprintf(buf, sizeof buf, "SELECT * FROM items WHERE id=%d", i);
                posix_trace_event(ev_query, buf, (size_t)len);
                pause_us(300);
            } else {
                posix_trace_event(ev_hit, &i, sizeof i);
            }
            posix_trace_event(ev_response, "200", 3);
            pause_us(100);
        }
        pause_us(2000 + 1000 * w);
    }
    return NULL;
}

int main(void) {
    posix_trace_eventid_open("request", &ev_request);
    posix_trace_eventid_open("cache_hit", &ev_hit);
    posix_trace_eventid_open("cache_miss", &ev_miss);
    posix_trace_eventid_open("db_query", &ev_query);
    posix_trace_eventid_open("response", &ev_response);
    pid_t child = fork();
    if (child == 0) {
        posix_trace_eventid_open("compact", &ev_compact);
        for (int i = 0; i < 40; i++) {
            posix_trace_event(ev_compact, &i, sizeof i);
            pause_us(i < 20 ? 500 : 1500);
        }
        _exit(0);
    }
    pthread_t t[3];
    for (long w = 0; w < 3; w++) pthread_create(&t[w], NULL, worker, (void *)w);
    for (int w = 0; w < 3; w++) pthread_join(t[w], NULL);
    waitpid(child, NULL, 0);
    return 0;
}
