//! Filling the event-type table (own test binary: the table is per process).

use tracekit_posix::api;
use tracekit_posix::consts::*;
use tracekit_posix::traced;

#[test]
fn full_table_gives_the_unnamed_user_event() {
    let trid = api::create(0, None, None).unwrap();
    // Fill the table: later names get the unnamed user event.
    let mut last = 0;
    for i in 0..TRACE_USER_EVENT_MAX + 5 {
        last = traced::eventid_open(format!("fill{i}").as_bytes()).unwrap();
    }
    assert_eq!(last, POSIX_TRACE_UNNAMED_USEREVENT);
    assert_eq!(
        api::eventid_get_name(trid, POSIX_TRACE_UNNAMED_USEREVENT).unwrap(),
        b"posix_trace_unnamed_userevent"
    );
    let mut seen = Vec::new();
    while let Some(id) = api::eventtypelist_getnext_id(trid).unwrap() {
        seen.push(id);
    }
    // 8 system types, the unnamed user event and 255 named ones.
    assert_eq!(seen.len(), 8 + TRACE_USER_EVENT_MAX);
    api::shutdown(trid).unwrap();
}
