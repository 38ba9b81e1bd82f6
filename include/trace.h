/*
 * <trace.h> -- POSIX tracing (options TRC, TEF, TRL, TRI) for Linux,
 * implemented by tracekit (link with -ltracekit_posix_c).
 *
 * glibc never implemented the Trace option and defines _POSIX_TRACE and
 * friends as -1 in <unistd.h>; including this header redefines them to
 * 200809L. sysconf(_SC_TRACE...) still answers for glibc (-1): test the
 * macros, not sysconf.
 *
 * Every function returns 0 or an error number (not -1 and errno).
 * Values below are checked against the library by its test suite.
 *
 * The library also wraps the exec family, posix_spawn(p) and _exit/_Exit
 * (link it before libc, as -ltracekit_posix_c does): a controller's logs
 * are complete before it execs or exits, and streams inherited under
 * POSIX_TRACE_INHERITED follow a traced process across exec and spawn.
 * docs/posix-conformance.md lists what the library does and where it
 * deliberately differs from the standard.
 */
#ifndef TRACEKIT_TRACE_H
#define TRACEKIT_TRACE_H

#include <stddef.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>
#include <limits.h>
#include <pthread.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Options (<unistd.h>) */
#undef _POSIX_TRACE
#undef _POSIX_TRACE_EVENT_FILTER
#undef _POSIX_TRACE_LOG
#undef _POSIX_TRACE_INHERIT
#define _POSIX_TRACE              200809L
#define _POSIX_TRACE_EVENT_FILTER 200809L
#define _POSIX_TRACE_LOG          200809L
#define _POSIX_TRACE_INHERIT      200809L

/* Limits (<limits.h>): minimums and this implementation's values. */
#ifndef _POSIX_TRACE_EVENT_NAME_MAX
#define _POSIX_TRACE_EVENT_NAME_MAX 30
#endif
#ifndef _POSIX_TRACE_NAME_MAX
#define _POSIX_TRACE_NAME_MAX 8
#endif
#ifndef _POSIX_TRACE_SYS_MAX
#define _POSIX_TRACE_SYS_MAX 8
#endif
#ifndef _POSIX_TRACE_USER_EVENT_MAX
#define _POSIX_TRACE_USER_EVENT_MAX 32
#endif
#define TRACE_EVENT_NAME_MAX 63
#define TRACE_NAME_MAX       31
#define TRACE_SYS_MAX        8   /* per process in this implementation */
#define TRACE_USER_EVENT_MAX 256 /* includes the unnamed user event */

/* Types (<sys/types.h>) */
typedef unsigned long trace_id_t;
typedef unsigned int trace_event_id_t;
typedef struct { unsigned long __tk_opaque[32]; } trace_attr_t;      /* 256 bytes */
typedef struct { unsigned long __tk_bits[20]; } trace_event_set_t;   /* ids 0..1279 */

struct posix_trace_status_info {
    int posix_stream_status;
    int posix_stream_full_status;
    int posix_stream_overrun_status;
    int posix_stream_flush_status;
    int posix_stream_flush_error;
    int posix_log_overrun_status;
    int posix_log_full_status;
};

struct posix_trace_event_info {
    trace_event_id_t posix_event_id;
    pid_t posix_pid;
    void *posix_prog_address;
    int posix_truncation_status;
    struct timespec posix_timestamp;
    pthread_t posix_thread_id;
};

/* Status values */
#define POSIX_TRACE_SUSPENDED    0
#define POSIX_TRACE_RUNNING      1
#define POSIX_TRACE_NOT_FULL     0
#define POSIX_TRACE_FULL         1
#define POSIX_TRACE_NO_OVERRUN   0
#define POSIX_TRACE_OVERRUN      1
#define POSIX_TRACE_NOT_FLUSHING 0
#define POSIX_TRACE_FLUSHING     1

/* Policies */
#define POSIX_TRACE_LOOP            1
#define POSIX_TRACE_UNTIL_FULL      2
#define POSIX_TRACE_FLUSH           3
#define POSIX_TRACE_APPEND          4
#define POSIX_TRACE_CLOSE_FOR_CHILD 0
#define POSIX_TRACE_INHERITED       1

/* Truncation */
#define POSIX_TRACE_NOT_TRUNCATED    0
#define POSIX_TRACE_TRUNCATED_RECORD 1
#define POSIX_TRACE_TRUNCATED_READ   2

/* posix_trace_eventset_fill */
#define POSIX_TRACE_WOPID_EVENTS  0
#define POSIX_TRACE_SYSTEM_EVENTS 1
#define POSIX_TRACE_ALL_EVENTS    2

/* posix_trace_set_filter (missing from the standard's symbol list) */
#define POSIX_TRACE_SET_EVENTSET 1
#define POSIX_TRACE_ADD_EVENTSET 2
#define POSIX_TRACE_SUB_EVENTSET 3

/* Event type identifiers */
#define POSIX_TRACE_ERROR       ((trace_event_id_t)512)
#define POSIX_TRACE_START       ((trace_event_id_t)513)
#define POSIX_TRACE_STOP        ((trace_event_id_t)514)
#define POSIX_TRACE_OVERFLOW    ((trace_event_id_t)515)
#define POSIX_TRACE_RESUME      ((trace_event_id_t)516)
#define POSIX_TRACE_FILTER      ((trace_event_id_t)517)
#define POSIX_TRACE_FLUSH_START ((trace_event_id_t)518)
#define POSIX_TRACE_FLUSH_STOP  ((trace_event_id_t)519)
#define POSIX_TRACE_UNNAMED_USEREVENT  ((trace_event_id_t)1024)
#define POSIX_TRACE_UNNAMED_USER_EVENT POSIX_TRACE_UNNAMED_USEREVENT

/* tracekit extension: pid for posix_trace_create that lets any process
 * holding the stream's name (env TRACEKIT_POSIX_STREAM) write into it. */
#define POSIX_TRACE_ALLPROC ((pid_t)-1)

/* Attributes */
int posix_trace_attr_init(trace_attr_t *attr);
int posix_trace_attr_destroy(trace_attr_t *attr);
int posix_trace_attr_getgenversion(const trace_attr_t *attr, char *genversion);
int posix_trace_attr_getname(const trace_attr_t *attr, char *tracename);
int posix_trace_attr_setname(trace_attr_t *attr, const char *tracename);
int posix_trace_attr_getcreatetime(const trace_attr_t *attr, struct timespec *createtime);
int posix_trace_attr_getclockres(const trace_attr_t *attr, struct timespec *resolution);
int posix_trace_attr_getstreamfullpolicy(const trace_attr_t *__restrict attr, int *__restrict streampolicy);
int posix_trace_attr_setstreamfullpolicy(trace_attr_t *attr, int streampolicy);
int posix_trace_attr_getlogfullpolicy(const trace_attr_t *__restrict attr, int *__restrict logpolicy);
int posix_trace_attr_setlogfullpolicy(trace_attr_t *attr, int logpolicy);
int posix_trace_attr_getinherited(const trace_attr_t *__restrict attr, int *__restrict inheritancepolicy);
int posix_trace_attr_setinherited(trace_attr_t *attr, int inheritancepolicy);
int posix_trace_attr_getstreamsize(const trace_attr_t *__restrict attr, size_t *__restrict streamsize);
int posix_trace_attr_setstreamsize(trace_attr_t *attr, size_t streamsize);
int posix_trace_attr_getmaxdatasize(const trace_attr_t *__restrict attr, size_t *__restrict maxdatasize);
int posix_trace_attr_setmaxdatasize(trace_attr_t *attr, size_t maxdatasize);
int posix_trace_attr_getmaxsystemeventsize(const trace_attr_t *__restrict attr, size_t *__restrict eventsize);
int posix_trace_attr_getmaxusereventsize(const trace_attr_t *__restrict attr, size_t data_len, size_t *__restrict eventsize);
int posix_trace_attr_getlogsize(const trace_attr_t *__restrict attr, size_t *__restrict logsize);
int posix_trace_attr_setlogsize(trace_attr_t *attr, size_t logsize);

/* Streams */
int posix_trace_create(pid_t pid, const trace_attr_t *__restrict attr, trace_id_t *__restrict trid);
int posix_trace_create_withlog(pid_t pid, const trace_attr_t *__restrict attr, int file_desc, trace_id_t *__restrict trid);
int posix_trace_flush(trace_id_t trid);
int posix_trace_shutdown(trace_id_t trid);
int posix_trace_start(trace_id_t trid);
int posix_trace_stop(trace_id_t trid);
int posix_trace_clear(trace_id_t trid);
int posix_trace_get_attr(trace_id_t trid, trace_attr_t *attr);
int posix_trace_get_status(trace_id_t trid, struct posix_trace_status_info *statusinfo);

/* Event types */
int posix_trace_eventid_open(const char *__restrict event_name, trace_event_id_t *__restrict event_id);
int posix_trace_trid_eventid_open(trace_id_t trid, const char *__restrict event_name, trace_event_id_t *__restrict event);
int posix_trace_eventid_get_name(trace_id_t trid, trace_event_id_t event, char *event_name);
int posix_trace_eventid_equal(trace_id_t trid, trace_event_id_t event1, trace_event_id_t event2);
int posix_trace_eventtypelist_getnext_id(trace_id_t trid, trace_event_id_t *__restrict event, int *__restrict unavailable);
int posix_trace_eventtypelist_rewind(trace_id_t trid);

/* Event sets and filters */
int posix_trace_eventset_empty(trace_event_set_t *set);
int posix_trace_eventset_fill(trace_event_set_t *set, int what);
int posix_trace_eventset_add(trace_event_id_t event_id, trace_event_set_t *set);
int posix_trace_eventset_del(trace_event_id_t event_id, trace_event_set_t *set);
int posix_trace_eventset_ismember(trace_event_id_t event_id, const trace_event_set_t *__restrict set, int *__restrict ismember);
int posix_trace_set_filter(trace_id_t trid, const trace_event_set_t *set, int how);
int posix_trace_get_filter(trace_id_t trid, trace_event_set_t *set);

/* Traced process */
void posix_trace_event(trace_event_id_t event_id, const void *__restrict data_ptr, size_t data_len);

/* Reading */
int posix_trace_getnext_event(trace_id_t trid, struct posix_trace_event_info *__restrict event,
                              void *__restrict data, size_t num_bytes,
                              size_t *__restrict data_len, int *__restrict unavailable);
int posix_trace_timedgetnext_event(trace_id_t trid, struct posix_trace_event_info *__restrict event,
                                   void *__restrict data, size_t num_bytes,
                                   size_t *__restrict data_len, int *__restrict unavailable,
                                   const struct timespec *__restrict abstime);
int posix_trace_trygetnext_event(trace_id_t trid, struct posix_trace_event_info *__restrict event,
                                 void *__restrict data, size_t num_bytes,
                                 size_t *__restrict data_len, int *__restrict unavailable);

/* Logs */
int posix_trace_open(int file_desc, trace_id_t *trid);
int posix_trace_rewind(trace_id_t trid);
int posix_trace_close(trace_id_t trid);

#ifdef __cplusplus
}
#endif
#endif /* TRACEKIT_TRACE_H */
