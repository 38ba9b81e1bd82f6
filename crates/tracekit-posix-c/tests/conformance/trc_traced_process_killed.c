/* shall: A traced process killed by SIGKILL while it writes events: the stream is still read to its end, every event read is whole and in order, and an event the kill cut short is a counted loss (overrun, OVERFLOW/RESUME), never a hang or a torn event.
 * where: §2.11.1.2 posix_stream_overrun_status; §2.11.2.1 POSIX_TRACE_OVERFLOW
 * option: TRC
 * deviation: A slot reserved by a writer that died before completing it is skipped after 100 ms and counted lost; the OVERFLOW event carries the time of the next event of that writer's lane.
 */
#include "conformance.h"

#define WRITERS 4
static trace_event_id_t id;
static void *writer(void *arg) {
    int base = (int)(long)arg * 100000000;
    for (int i = 0;; i++) { int v[8] = {base + i, base + i, base + i, base + i, base + i, base + i, base + i, base + i}; posix_trace_event(id, v, sizeof v); }
    return NULL;
}
int main(int argc, char **argv) {
    if (argc > 1) { /* the traced process: writes from several threads until killed */
        char c; if (read(0, &c, 1) != 1) return 2;
        OK(posix_trace_eventid_open("killed", &id));
        pthread_t th[WRITERS];
        for (long i = 0; i < WRITERS; i++) pthread_create(&th[i], NULL, writer, (void *)i);
        pause();
        return 0;
    }
    int go[2]; CHECK(pipe(go) == 0);
    fflush(NULL);
    pid_t p = fork();
    if (p == 0) { dup2(go[0], 0); execl(argv[0], argv[0], "traced", (char *)NULL); _exit(3); }
    trace_attr_t a; trace_id_t t;
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_setstreamfullpolicy(&a, POSIX_TRACE_LOOP));
    OK(posix_trace_attr_setstreamsize(&a, 1 << 20));
    OK(posix_trace_create(p, &a, &t));
    OK(posix_trace_start(t));
    CHECK(write(go[1], "g", 1) == 1);
    usleep(100000);
    kill(p, SIGKILL);
    waitpid(p, NULL, 0);
    tk_event *e = malloc(200000 * sizeof *e);
    int n = tk_read(t, 1, e, 200000), user = 0, overflow = 0;
    int last[WRITERS]; for (int i = 0; i < WRITERS; i++) last[i] = -1;
    for (int i = 0; i < n; i++) {
        if (e[i].id == POSIX_TRACE_OVERFLOW) { overflow++; EQ(e[i + 1].id, POSIX_TRACE_RESUME); }
        if (e[i].id < 1024) continue;
        user++;
        EQ(e[i].len, 32);
        int v[8]; memcpy(v, e[i].data, sizeof v);
        for (int j = 1; j < 8; j++) EQ(v[j], v[0]);
        int w = v[0] / 100000000, s = v[0] % 100000000;
        CHECK(w >= 0 && w < WRITERS);
        CHECK(s > last[w]); last[w] = s;
    }
    CHECK(user > 0);
    tk_check_time_order(e, n);
    if (overflow) EQ(tk_status(t).posix_stream_overrun_status, POSIX_TRACE_OVERRUN);
    OK(posix_trace_shutdown(t));
    return 0;
}
