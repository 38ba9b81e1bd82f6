/* Helpers of the conformance suite (tests/conformance.rs compiles each
 * test against include/trace.h and the library and runs it).
 *
 * A test exits 0 when the sentence of the standard it checks holds, 1
 * (with a message naming the file and line) when it does not, 77 when it
 * cannot be checked here (e.g. EPERM as root). Files it writes go to the
 * directory $TK_TMPDIR, one per test run. */
#ifndef TK_CONFORMANCE_H
#define TK_CONFORMANCE_H
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <trace.h>

#define FAIL(...) do { fprintf(stderr, "%s:%d: ", __FILE__, __LINE__); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define CHECK(cond) do { if (!(cond)) FAIL("check failed: %s", #cond); } while (0)
#define EQ(a, b) do { long long a_ = (long long)(a), b_ = (long long)(b); \
    if (a_ != b_) FAIL("%s == %lld, expected %s == %lld", #a, a_, #b, b_); } while (0)
#define OK(call) do { int rc_ = (call); if (rc_ != 0) \
    FAIL("%s returned %d (%s)", #call, rc_, strerror(rc_)); } while (0)
#define ERR(call, e) do { int rc_ = (call); if (rc_ != (e)) \
    FAIL("%s returned %d (%s), expected %s", #call, rc_, strerror(rc_), #e); } while (0)
#define SKIP(...) do { printf("skip: "); printf(__VA_ARGS__); putchar('\n'); exit(77); } while (0)

/* $TK_TMPDIR/name */
static inline const char *tk_path(const char *name) {
    static char buf[8][4096];
    static int next;
    char *b = buf[next++ % 8];
    const char *dir = getenv("TK_TMPDIR");
    snprintf(b, 4096, "%s/%s", dir ? dir : ".", name);
    return b;
}

/* A fresh log file, open for reading and writing. */
static inline int tk_log_fd(const char *name) {
    int fd = open(tk_path(name), O_CREAT | O_TRUNC | O_RDWR, 0644);
    if (fd < 0) FAIL("cannot create %s: %s", tk_path(name), strerror(errno));
    return fd;
}

static inline long long tk_ns(struct timespec t) {
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static inline long long tk_now(void) {
    struct timespec t; clock_gettime(CLOCK_REALTIME, &t); return tk_ns(t);
}

typedef struct {
    trace_event_id_t id;
    pid_t pid;
    pthread_t thread;
    void *prog;
    int trunc;
    long long ts;
    size_t len;
    unsigned char data[320];
} tk_event;

/* Reads up to max events from trid with getnext (a log, or a stream
 * without log that will not grow: trygetnext). Returns the count. */
static inline int tk_read(trace_id_t trid, int stream, tk_event *out, int max) {
    int n = 0;
    for (;;) {
        struct posix_trace_event_info e; tk_event t; int unavailable = 1;
        int rc = stream ? posix_trace_trygetnext_event(trid, &e, t.data, sizeof t.data, &t.len, &unavailable)
                        : posix_trace_getnext_event(trid, &e, t.data, sizeof t.data, &t.len, &unavailable);
        if (rc != 0) FAIL("reading: %s", strerror(rc));
        if (unavailable) return n;
        if (n >= max) FAIL("more than %d events", max);
        t.id = e.posix_event_id; t.pid = e.posix_pid; t.thread = e.posix_thread_id;
        t.prog = e.posix_prog_address; t.trunc = e.posix_truncation_status;
        t.ts = tk_ns(e.posix_timestamp);
        out[n++] = t;
    }
}

/* Opens the log `name` (posix_trace_open) and reads it. */
static inline int tk_read_log(const char *name, tk_event *out, int max, trace_id_t *trid) {
    int fd = open(tk_path(name), O_RDONLY);
    if (fd < 0) FAIL("cannot open %s: %s", tk_path(name), strerror(errno));
    trace_id_t t;
    OK(posix_trace_open(fd, &t));
    int n = tk_read(t, 0, out, max);
    if (trid) *trid = t; else OK(posix_trace_close(t));
    return n;
}

static inline int tk_count(const tk_event *e, int n, trace_event_id_t id) {
    int c = 0;
    for (int i = 0; i < n; i++) c += e[i].id == id;
    return c;
}

static inline int tk_index(const tk_event *e, int n, trace_event_id_t id) {
    for (int i = 0; i < n; i++) if (e[i].id == id) return i;
    return -1;
}

/* Timestamps never go back. */
static inline void tk_check_time_order(const tk_event *e, int n) {
    for (int i = 1; i < n; i++)
        if (e[i].ts < e[i - 1].ts)
            FAIL("event %d (id %u) at %lld is older than event %d (id %u) at %lld",
                 i, e[i].id, e[i].ts, i - 1, e[i - 1].id, e[i - 1].ts);
}

/* The int payloads of the events of type id, in order. */
static inline int tk_ints(const tk_event *e, int n, trace_event_id_t id, int *out, int max) {
    int k = 0;
    for (int i = 0; i < n && k < max; i++)
        if (e[i].id == id) { int v; memcpy(&v, e[i].data, sizeof v); out[k++] = v; }
    return k;
}

/* The payloads 0, 1, ..., count-1 of type id, each once, in order. */
static inline void tk_check_sequence(const tk_event *e, int n, trace_event_id_t id, int count) {
    int next = 0;
    for (int i = 0; i < n; i++) {
        if (e[i].id != id) continue;
        int v; memcpy(&v, e[i].data, sizeof v);
        if (v != next) FAIL("event %d: payload %d, expected %d", i, v, next);
        next++;
    }
    if (next != count) FAIL("%d events of type %u, expected %d", next, id, count);
}

static inline struct posix_trace_status_info tk_status(trace_id_t t) {
    struct posix_trace_status_info st;
    OK(posix_trace_get_status(t, &st));
    return st;
}

/* Runs fn in a child process (which then exits 0) and returns its pid
 * without waiting for it. */
static inline pid_t tk_fork(void (*fn)(void *), void *arg) {
    fflush(NULL);
    pid_t p = fork();
    if (p < 0) FAIL("fork: %s", strerror(errno));
    if (p == 0) { fn(arg); _exit(0); }
    return p;
}

/* Waits for child p; returns its exit status (or 128+signal). */
static inline int tk_wait(pid_t p) {
    int st;
    while (waitpid(p, &st, 0) < 0) if (errno != EINTR) FAIL("waitpid: %s", strerror(errno));
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Runs fn in a child process; returns its exit status (or 128+signal). */
static inline int tk_in_child(void (*fn)(void *), void *arg) {
    return tk_wait(tk_fork(fn, arg));
}

/* Runs this program again (argv0) by posix_spawn with the argument
 * "child", checks that it exits 0, and returns its pid. */
static inline pid_t tk_spawn_self(char *argv0) {
    extern char **environ;
    char *argv[] = {argv0, "child", NULL}; pid_t p;
    OK(posix_spawn(&p, argv0, NULL, NULL, argv, environ));
    EQ(tk_wait(p), 0);
    return p;
}

/* A started stream with the given inheritance policy, with the log
 * `log` if not NULL. */
static inline trace_id_t tk_inherited_stream(int policy, const char *log) {
    trace_attr_t a; trace_id_t t;
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_setinherited(&a, policy));
    if (log) OK(posix_trace_create_withlog(0, &a, tk_log_fd(log), &t));
    else OK(posix_trace_create(0, &a, &t));
    OK(posix_trace_start(t));
    return t;
}

/* What tk_log_controller does: a stream with log `name`, n events of type
 * "before-end" (payload 0..n-1), then `end` ends the process image. */
struct tk_controller { const char *name; int n; void (*end)(void); };

/* A controller (run it in a child, e.g. with tk_fork): see struct
 * tk_controller. Exits 99 if `end` returns. */
static inline void tk_log_controller(void *arg) {
    const struct tk_controller *c = arg;
    trace_id_t t; trace_event_id_t id;
    OK(posix_trace_create_withlog(0, NULL, tk_log_fd(c->name), &t));
    OK(posix_trace_eventid_open("before-end", &id));
    OK(posix_trace_start(t));
    for (int i = 0; i < c->n; i++) posix_trace_event(id, &i, sizeof i);
    c->end();
    _exit(99);
}

/* The log of a tk_log_controller is complete: it holds START, the n
 * events in order, and ends with the shutdown's STOP then
 * FLUSH_START/FLUSH_STOP (the last flush), nothing lost. */
static inline void tk_check_complete_log(const char *name, int n) {
    tk_event *e = malloc((n + 64) * sizeof *e); trace_id_t lt; char s[TRACE_EVENT_NAME_MAX + 1];
    if (!e) FAIL("out of memory");
    int m = tk_read_log(name, e, n + 64, &lt);
    EQ(e[0].id, POSIX_TRACE_START);
    int user = -1;
    for (int i = 0; i < m; i++) if (e[i].id >= 1024) { user = e[i].id; break; }
    CHECK(user >= 0);
    OK(posix_trace_eventid_get_name(lt, user, s)); CHECK(strcmp(s, "before-end") == 0);
    tk_check_sequence(e, m, user, n);
    tk_check_time_order(e, m);
    EQ(e[m - 1].id, POSIX_TRACE_FLUSH_STOP);
    EQ(tk_status(lt).posix_stream_overrun_status, POSIX_TRACE_NO_OVERRUN);
    OK(posix_trace_close(lt));
    free(e);
}

/* Waits (bounded: 20 s) until the log `name` is complete, as a keeper
 * leaves it after its controller was killed: posix_trace_open succeeds and
 * the final status says the stream is no longer running. */
static inline void tk_wait_complete(const char *name) {
    for (int i = 0; i < 2000; i++) {
        int fd = open(tk_path(name), O_RDONLY);
        if (fd >= 0) {
            /* The log format's header: flags at offset 24, bit 0 complete. */
            unsigned char h[32];
            if (pread(fd, h, sizeof h, 0) == (ssize_t)sizeof h && (h[24] & 1)) { close(fd); return; }
            close(fd);
        }
        usleep(10000);
    }
    FAIL("%s never became complete", name);
}
#endif
