//! Applying one event to the state of its process.

use super::*;

#[allow(clippy::collapsible_match)] // one arm per event kind reads best
pub(super) fn apply(p: &mut ProcState, ev: &Event<'_>, anomalies: &mut Anomalies) {
    if let Some(t) = ev.body.t_abs() {
        p.last_t_abs = p.last_t_abs.max(t.0);
    }
    let thread: &[u8] = ev.thread.as_deref().unwrap_or(b"main");
    match &ev.body {
        Body::Version { exe, .. } => p.version = Some(exe.as_ref().into()),
        Body::Start { argv, .. } => p.argv = argv.iter().map(|a| a.as_ref().into()).collect(),
        Body::CmdName { name, hierarchy } => {
            p.cmd_name = Some(name.as_ref().into());
            p.hierarchy = hierarchy.as_deref().map(Into::into);
        }
        Body::CmdMode { name } => p.cmd_mode = Some(name.as_ref().into()),
        Body::Alias { alias, argv } => {
            p.alias = Some((
                alias.as_ref().into(),
                argv.iter().map(|a| a.as_ref().into()).collect(),
            ))
        }
        Body::Exit { t_abs, code } => {
            p.exit_code = Some(*code);
            p.elapsed = Some(t_abs.0);
            if p.end == End::None {
                p.end = End::Exit;
            }
        }
        Body::AtExit { t_abs, code } => {
            p.end_thread = Some(thread.into());
            p.exit_code = Some(*code);
            // `exit.t_abs` is the command's time; atexit handlers come after.
            if p.end != End::Exit {
                p.elapsed = Some(t_abs.0);
            }
            p.end = End::AtExit;
        }
        Body::Signal { t_abs, signo } => {
            p.end_thread = Some(thread.into());
            p.signal = Some(*signo);
            p.elapsed = Some(t_abs.0);
            p.end = End::Signal;
        }
        Body::Exec { t_abs, .. } => {
            // The image is replaced; a failed exec (`exec_result`) resumes.
            p.end = End::Exec;
            if let Some(t) = t_abs {
                p.elapsed = Some(t.0);
            } else {
                p.elapsed = Some(p.last_t_abs);
            }
        }
        Body::ExecResult { .. } => {
            if p.end == End::Exec {
                p.end = End::None;
                p.elapsed = None;
            }
        }
        Body::ChildStart {
            child_id,
            child_class,
            hook_name,
            argv,
            use_shell,
            ..
        } => {
            if p.children.len() >= MAX_CHILDREN {
                p.children_omitted += 1;
            } else {
                p.children.push(ChildState {
                    child_id: *child_id,
                    class: child_class.as_deref().map(Into::into),
                    hook: hook_name.as_deref().map(Into::into),
                    argv: argv.iter().map(|a| a.as_ref().into()).collect(),
                    pid: None,
                    code: None,
                    elapsed: None,
                    start_unix: ev.time.as_ref().and_then(Time::unix).map(|t| t.0),
                    use_shell: use_shell.unwrap_or(false),
                });
            }
        }
        Body::ChildExit {
            child_id,
            pid,
            code,
            t_rel,
            ..
        } => match p
            .children
            .iter_mut()
            .rev()
            .find(|c| c.child_id == *child_id)
        {
            Some(c) => {
                c.pid = Some(*pid);
                c.code = Some(*code);
                c.elapsed = Some(t_rel.0);
            }
            None if p.children_omitted > 0 => {}
            None => anomalies.unmatched_child_exit += 1,
        },
        Body::RegionEnter(r) => apply_region(
            p,
            &RegionLine {
                leave: false,
                sid: b"",
                thread,
                nesting: r.nesting,
                category: r.category.as_deref(),
                label: r.label.as_deref(),
                t_rel: Micros(0),
            },
            anomalies,
        ),
        Body::RegionLeave { region, t_rel } => apply_region(
            p,
            &RegionLine {
                leave: true,
                sid: b"",
                thread,
                nesting: region.nesting,
                category: region.category.as_deref(),
                label: region.label.as_deref(),
                t_rel: *t_rel,
            },
            anomalies,
        ),
        Body::Data {
            nesting,
            category,
            key,
            value,
            ..
        }
        | Body::DataJson {
            nesting,
            category,
            key,
            value,
            ..
        } => {
            if p.data.len() >= MAX_DATA {
                p.data_omitted += 1;
            } else {
                p.data.push(DataItem {
                    thread: text(thread),
                    nesting: *nesting,
                    category: text(category.as_deref().unwrap_or(b"")),
                    key: text(key),
                    value: text(value),
                    json: matches!(ev.body, Body::DataJson { .. }),
                });
            }
        }
        Body::Counter {
            category,
            name,
            count,
            ..
        } => {
            if p.counters.len() < MAX_COUNTERS {
                p.counters.push(CounterItem {
                    thread: text(thread),
                    category: text(category),
                    name: text(name),
                    count: *count,
                });
            }
        }
        Body::Timer {
            category,
            name,
            intervals,
            t_total,
            t_min,
            t_max,
            ..
        } => {
            if p.timers.len() < MAX_COUNTERS {
                p.timers.push(TimerItem {
                    thread: text(thread),
                    category: text(category),
                    name: text(name),
                    intervals: *intervals,
                    total_s: t_total.as_secs_f64(),
                    min_s: t_min.as_secs_f64(),
                    max_s: t_max.as_secs_f64(),
                });
            }
        }
        Body::Error { msg, fmt } => {
            let m: &[u8] = msg.as_deref().unwrap_or(b"");
            let f: &[u8] = fmt.as_deref().unwrap_or(m);
            if p.error_keys.len() < MAX_ERRORS {
                p.error_keys.push((f.into(), m.into()));
            }
            if p.errors.len() >= MAX_ERRORS {
                p.errors_omitted += 1;
            } else {
                p.errors.push(text(m));
            }
        }
        _ => {}
    }
}

pub(super) fn apply_region(p: &mut ProcState, r: &RegionLine<'_>, anomalies: &mut Anomalies) {
    let t = p.thread(r.thread);
    if !r.leave {
        let parent = p.threads[t]
            .stack
            .last()
            .map_or(p.threads[t].root, |f| f.node);
        let node = match p.child_slot(parent, r.category.unwrap_or(b""), r.label.unwrap_or(b"")) {
            Some(n) => n,
            None => {
                p.regions_dropped += 1;
                u32::MAX
            }
        };
        p.threads[t].stack.push(Frame {
            node,
            nesting: r.nesting,
            child_time: 0,
        });
        return;
    }
    let stack = &mut p.threads[t].stack;
    // Pop regions left open below this one (should not happen).
    while stack.last().is_some_and(|f| f.nesting > r.nesting) {
        stack.pop();
        anomalies.unclosed_regions += 1;
    }
    match stack.last() {
        Some(f) if f.nesting == r.nesting => {
            let f = stack.pop().expect("checked");
            let dur = r.t_rel.0;
            if let Some(parent) = stack.last_mut() {
                parent.child_time += dur;
            }
            if f.node != u32::MAX {
                let s = &mut p.regions[f.node as usize];
                s.count += 1;
                s.total += dur;
                s.self_time += dur - f.child_time;
                s.max = s.max.max(dur);
            }
        }
        _ => anomalies.unmatched_region_leave += 1,
    }
}
