/* One process plays controller, traced process and analyzer. */
#include "check.h"

static void emit(trace_event_id_t id, const char *s) { posix_trace_event(id, s, strlen(s)); }

int main(void) {
    trace_attr_t attr;
    OK(posix_trace_attr_init(&attr));
    int pol; size_t sz; char name[TRACE_NAME_MAX + 1];
    OK(posix_trace_attr_getstreamfullpolicy(&attr, &pol)); CHECK(pol == POSIX_TRACE_LOOP);
    OK(posix_trace_attr_getinherited(&attr, &pol)); CHECK(pol == POSIX_TRACE_CLOSE_FOR_CHILD);
    OK(posix_trace_attr_getlogfullpolicy(&attr, &pol)); CHECK(pol == POSIX_TRACE_LOOP);
    OK(posix_trace_attr_getgenversion(&attr, name)); CHECK(strlen(name) > 0);
    OK(posix_trace_attr_setname(&attr, "single"));
    OK(posix_trace_attr_getname(&attr, name)); CHECK(strcmp(name, "single") == 0);
    CHECK(posix_trace_attr_setstreamfullpolicy(&attr, 12345) == EINVAL);
    OK(posix_trace_attr_setmaxdatasize(&attr, 16));
    OK(posix_trace_attr_getmaxdatasize(&attr, &sz)); CHECK(sz == 16);
    size_t ev_sz; OK(posix_trace_attr_getmaxusereventsize(&attr, 16, &ev_sz)); CHECK(ev_sz >= 16);

    trace_id_t trid;
    OK(posix_trace_create(0, &attr, &trid));
    OK(posix_trace_attr_destroy(&attr)); /* does not affect the stream */
    trace_event_id_t a, b, again;
    OK(posix_trace_eventid_open("alpha", &a));
    OK(posix_trace_eventid_open("beta", &b));
    OK(posix_trace_eventid_open("alpha", &again));
    CHECK(posix_trace_eventid_equal(trid, a, again) && !posix_trace_eventid_equal(trid, a, b));
    char longname[100]; memset(longname, 'x', 99); longname[99] = 0;
    CHECK(posix_trace_eventid_open(longname, &again) == ENAMETOOLONG);

    trace_event_set_t set;
    OK(posix_trace_eventset_empty(&set));
    OK(posix_trace_eventset_add(b, &set));
    int member; OK(posix_trace_eventset_ismember(b, &set, &member)); CHECK(member);
    OK(posix_trace_set_filter(trid, &set, POSIX_TRACE_SET_EVENTSET));

    struct posix_trace_status_info st;
    OK(posix_trace_get_status(trid, &st));
    CHECK(st.posix_stream_status == POSIX_TRACE_SUSPENDED && st.posix_stream_full_status == POSIX_TRACE_NOT_FULL);
    OK(posix_trace_start(trid));
    emit(a, "first");
    emit(b, "filtered out");
    emit(a, "a payload longer than sixteen bytes");
    OK(posix_trace_stop(trid));

    struct posix_trace_event_info ev; char buf[64]; size_t len; int unavail;
    OK(posix_trace_getnext_event(trid, &ev, buf, sizeof buf, &len, &unavail));
    CHECK(!unavail && ev.posix_event_id == POSIX_TRACE_START);
    OK(posix_trace_getnext_event(trid, &ev, buf, sizeof buf, &len, &unavail));
    CHECK(ev.posix_event_id == a && len == 5 && memcmp(buf, "first", 5) == 0);
    CHECK(ev.posix_pid == getpid() && pthread_equal(ev.posix_thread_id, pthread_self()));
    CHECK(ev.posix_truncation_status == POSIX_TRACE_NOT_TRUNCATED);
    /* The call site is inside emit(). */
    CHECK((char *)ev.posix_prog_address > (char *)emit && (char *)ev.posix_prog_address < (char *)emit + 256);
    struct timespec now; clock_gettime(CLOCK_REALTIME, &now);
    CHECK(ev.posix_timestamp.tv_sec <= now.tv_sec && ev.posix_timestamp.tv_sec > now.tv_sec - 60);
    OK(posix_trace_getnext_event(trid, &ev, buf, 4, &len, &unavail));
    CHECK(ev.posix_event_id == a && len == 4 && ev.posix_truncation_status == POSIX_TRACE_TRUNCATED_READ);
    OK(posix_trace_getnext_event(trid, &ev, buf, sizeof buf, &len, &unavail));
    CHECK(ev.posix_event_id == POSIX_TRACE_STOP);
    OK(posix_trace_trygetnext_event(trid, &ev, buf, sizeof buf, &len, &unavail));
    CHECK(unavail);
    struct timespec soon; clock_gettime(CLOCK_REALTIME, &soon); soon.tv_nsec += 10000000;
    if (soon.tv_nsec >= 1000000000) { soon.tv_sec++; soon.tv_nsec -= 1000000000; }
    CHECK(posix_trace_timedgetnext_event(trid, &ev, buf, sizeof buf, &len, &unavail, &soon) == ETIMEDOUT);

    char ename[TRACE_EVENT_NAME_MAX + 1];
    OK(posix_trace_eventid_get_name(trid, a, ename)); CHECK(strcmp(ename, "alpha") == 0);
    OK(posix_trace_eventid_get_name(trid, POSIX_TRACE_STOP, ename)); CHECK(strcmp(ename, "posix_trace_stop") == 0);
    trace_event_id_t it; int n = 0;
    for (;;) { OK(posix_trace_eventtypelist_getnext_id(trid, &it, &unavail)); if (unavail) break; n++; }
    CHECK(n == 8 + 3); /* system types, unnamed, alpha, beta */
    trace_attr_t got; OK(posix_trace_attr_init(&got)); OK(posix_trace_get_attr(trid, &got));
    OK(posix_trace_attr_getname(&got, name)); CHECK(strcmp(name, "single") == 0);
    struct timespec ct; OK(posix_trace_attr_getcreatetime(&got, &ct)); CHECK(ct.tv_sec > 0);
    OK(posix_trace_shutdown(trid));
    CHECK(posix_trace_start(trid) == EINVAL);
    CHECK(posix_trace_close(trid) == EINVAL);
    puts("single ok");
    return 0;
}
