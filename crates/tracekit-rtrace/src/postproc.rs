//! `sp-rtrace-postproc` on text input: filters, leak matching, backtrace
//! compression and resolving, with the reference's output layout.
//!
//! Without `--filter-leaks`/`--compress` calls stream straight through
//! (memory is bounded by one call). With `--filter-leaks` only live
//! allocations are held. `--compress` without `--filter-leaks` has to
//! hold every call, as the reference does.
//!
//! Deliberate differences from the reference (each is a bug or a
//! limitation there): the context registry is kept on re-read (the
//! reference writes `@ 0 : (null)`, spec A7); an empty header value does not
//! stop header parsing; the v1.0 `time` key is read as `timestamp`;
//! backtraces that become identical after `--backtrace-depth` are grouped
//! together; calls are processed in file order (the reference sorts by
//! timestamp, then index: we count calls out of that order and warn);
//! map/registry records that appear after the first call are written where
//! they were in streaming mode.

use std::collections::HashSet;
use std::io::Write;
use std::rc::Rc;

use rustc_hash::FxHashMap;
use tracekit_core::{Error, Position, Result, Warnings};

use crate::live::{resource_index, Allocated, Freed, LiveSet};
use crate::reader::{Backtrace, FullCall, IntoItems, Item, Items};
use crate::record::{
    write_resource, Attachment, ContextDef, Frame, Header, HeaderField, MemoryMap, ResourceDef,
};
use crate::resolve::Resolver;

/// Group order for `--compress` (`-s`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortOrder {
    /// Total size, descending (`size`).
    Size,
    /// Total size, ascending (`size-asc`, the default as implemented).
    SizeAsc,
    /// Block count, descending (`count`).
    Count,
    /// Block count, ascending (`count-asc`).
    CountAsc,
}

impl SortOrder {
    pub fn parse(s: &str) -> Option<SortOrder> {
        Some(match s {
            "size" => SortOrder::Size,
            "size-asc" => SortOrder::SizeAsc,
            "count" => SortOrder::Count,
            "count-asc" => SortOrder::CountAsc,
            _ => return None,
        })
    }
}

/// `--call-address=<target>:<start>+<size>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallAddress {
    pub target: String,
    pub start: u64,
    pub size: u64,
}

impl CallAddress {
    pub fn parse(s: &str) -> Option<CallAddress> {
        let (target, range) = s.rsplit_once(':')?;
        let (start, size) = range.split_once('+')?;
        let hex = |t: &str| u64::from_str_radix(t.trim_start_matches("0x"), 16).ok();
        Some(CallAddress {
            target: target.to_string(),
            start: hex(start)?,
            size: hex(size)?,
        })
    }
}

/// The post-processor's options, named after sp-rtrace-postproc's.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub filter_leaks: bool,
    pub compress: bool,
    pub resolve: bool,
    /// Only meaningful with `compress`; default [`SortOrder::SizeAsc`].
    pub sort: Option<SortOrder>,
    /// `-C`: keep calls whose context mask intersects this (0 = calls
    /// outside every context).
    pub context: Option<u32>,
    /// `-R`: resource-type bit mask.
    pub resource: Option<u32>,
    pub backtrace_depth: Option<usize>,
    pub include: Option<HashSet<i64>>,
    pub exclude: Option<HashSet<i64>>,
    pub call_address: Option<CallAddress>,
    /// Sysroot for resolving.
    pub root: Option<std::path::PathBuf>,
}

/// Reads an include/exclude file: one call index per line (C `%li`:
/// decimal, `0x` hex or leading-0 octal); other lines are ignored.
pub fn parse_index_list(text: &str) -> HashSet<i64> {
    text.lines().filter_map(parse_c_long).collect()
}

fn parse_c_long(line: &str) -> Option<i64> {
    let s = line.trim_start();
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let (radix, digits) = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        (16, h)
    } else if s.starts_with('0') && s.len() > 1 {
        (8, &s[1..])
    } else {
        (10, s)
    };
    let end = digits
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(digits.len());
    let v = if end == 0 {
        if radix == 8 {
            0 // a lone "0" followed by junk
        } else {
            return None;
        }
    } else {
        i64::from_str_radix(&digits[..end], radix).ok()?
    };
    Some(if neg { -v } else { v })
}

/// What a run did.
#[derive(Debug, Default)]
pub struct Stats {
    pub calls_read: u64,
    pub calls_written: u64,
    /// Calls whose (timestamp, index) is lower than the previous call's.
    pub out_of_order: u64,
    pub temporary_comments_dropped: u64,
    pub warnings: Warnings,
}

struct Preamble {
    header: Header,
    attachments: Vec<Attachment>,
    contexts: Vec<ContextDef>,
    resources: Vec<ResourceDef>,
    maps: Vec<MemoryMap>,
}

struct Comment {
    /// Index of the last call read before the comment.
    anchor: i64,
    text: String,
}

struct Group {
    frames: Backtrace,
    calls: Vec<FullCall>,
    hash: u64,
    count: i64,
    size: i64,
}

/// The reference's backtrace hash (bucket order decides ties in sorting).
fn bt_hash(frames: &[Frame]) -> u64 {
    let mut hash = 0u64;
    for f in frames {
        let mut v = f.addr;
        while v != 0 {
            hash ^= v & 0xffff;
            v >>= 3;
        }
    }
    hash % (1 << 16)
}

struct State<'o, W: Write> {
    opts: &'o Options,
    out: W,
    pre: Preamble,
    preamble_written: bool,
    comments: std::collections::VecDeque<Comment>,
    resolver: Option<Resolver>,
    call_range: Option<(u64, u64)>,
    call_range_checked: bool,
    /// Whether calls carry `<type>` (more than one visible resource type);
    /// recomputed when the registry changes.
    show_types: Option<bool>,
    // --filter-leaks
    survivors: FxHashMap<u64, FullCall>,
    /// The live blocks: the number of the call that allocated each.
    live: LiveSet<u64>,
    // --compress without --filter-leaks
    all: Vec<FullCall>,
    seq: u64,
    stats: Stats,
}

fn io(e: std::io::Error) -> Error {
    Error::io(None, e)
}

/// Runs the post-processor over a text trace.
pub fn run<R: IntoItems, W: Write>(input: R, opts: &Options, out: W) -> Result<Stats> {
    let mut asm = input.into_items();
    let header = match asm.next_item()? {
        Some(Item::Header(h)) => h,
        _ => {
            return Err(Error::malformed(
                Position::Line(1),
                "missing sp-rtrace header line",
            ))
        }
    };
    let mut st = State {
        opts,
        out,
        pre: Preamble {
            header,
            attachments: Vec::new(),
            contexts: Vec::new(),
            resources: Vec::new(),
            maps: Vec::new(),
        },
        preamble_written: false,
        comments: Default::default(),
        resolver: opts.resolve.then(|| Resolver::new(opts.root.clone())),
        call_range: None,
        call_range_checked: false,
        show_types: None,
        survivors: FxHashMap::default(),
        live: LiveSet::default(),
        all: Vec::new(),
        seq: 0,
        stats: Stats::default(),
    };
    let mut last_index: i64 = 0;
    let mut last_key: Option<(u32, i64)> = None;
    while let Some(item) = asm.next_item()? {
        match item {
            Item::Header(_) => {}
            Item::TempComment(_) => st.stats.temporary_comments_dropped += 1,
            Item::Comment(text) => st.comments.push_back(Comment {
                anchor: last_index,
                text,
            }),
            Item::Attachment(a) => {
                if st.preamble_written {
                    writeln!(st.out, "& {} : {}", a.name, a.path).map_err(io)?;
                } else {
                    st.pre.attachments.push(a);
                }
            }
            Item::Context(c) => {
                if st.preamble_written {
                    if st.context_kept(&c) {
                        writeln!(st.out, "@ {:x} : {}", c.id, c.name).map_err(io)?;
                    }
                } else {
                    st.pre.contexts.push(c);
                }
            }
            Item::Resource(r) => {
                if st.pre.resources.iter().any(|x| x.name == r.name) {
                    continue;
                }
                let write_now = st.preamble_written && st.resource_kept(&r);
                st.pre.resources.push(r);
                st.show_types = None;
                if write_now {
                    let r = st.pre.resources.last().cloned();
                    if let Some(r) = r {
                        write_resource(&mut st.out, &r, r.id).map_err(io)?;
                    }
                }
            }
            Item::Map(m) => {
                if let Some(res) = st.resolver.as_mut() {
                    res.add_map(&m);
                }
                if st.preamble_written {
                    writeln!(st.out, ": {} => 0x{:x}-0x{:x}", m.path, m.start, m.end)
                        .map_err(io)?;
                }
                st.pre.maps.push(m);
            }
            Item::Call(fc) => {
                st.stats.calls_read += 1;
                last_index = fc.call.index;
                let key = (fc.call.timestamp.unwrap_or(0), fc.call.index);
                if last_key.is_some_and(|k| key < k) {
                    st.stats.out_of_order += 1;
                }
                last_key = Some(key);
                st.call(fc)?;
            }
        }
    }
    st.finish()?;
    let mut stats = st.stats;
    let reader_warnings = asm.take_warnings();
    stats.warnings.extend(reader_warnings);
    if stats.out_of_order > 0 {
        stats.warnings.push(
            Position::Unknown,
            format!(
                "{} call(s) out of (timestamp, index) order; processed in file order",
                stats.out_of_order
            ),
        );
    }
    Ok(stats)
}

impl<W: Write> State<'_, W> {
    fn context_kept(&self, c: &ContextDef) -> bool {
        match self.opts.context {
            Some(mask) => c.id & mask != 0,
            None => true,
        }
    }

    fn resource_kept(&self, r: &ResourceDef) -> bool {
        match self.opts.resource {
            Some(mask) => resource_bit(r.id) & mask != 0,
            None => true,
        }
    }

    /// Resource types that will be written (after `-R`).
    fn visible_resources(&self) -> Vec<&ResourceDef> {
        self.pre
            .resources
            .iter()
            .filter(|r| self.resource_kept(r))
            .collect()
    }

    /// The registry entry of a call (by type name, else the first one).
    fn resource_of(&self, fc: &FullCall) -> Option<usize> {
        resource_index(
            self.pre.resources.iter().map(|r| r.name.as_str()),
            fc.call.resource_type.as_deref(),
        )
    }

    fn keep(&mut self, fc: &mut FullCall) -> bool {
        let o = self.opts;
        if let Some(depth) = o.backtrace_depth {
            if fc.frames.len() > depth {
                fc.frames = Rc::from(&fc.frames[..depth]);
            }
        }
        if o.resource.is_some() {
            if let Some(ri) = self.resource_of(fc) {
                let r = &self.pre.resources[ri];
                if !self.resource_kept(r) {
                    return false;
                }
            }
        }
        if let Some(ca) = &o.call_address {
            if !self.call_range_checked {
                self.call_range_checked = true;
                self.call_range = self.find_call_range(ca);
                if self.call_range.is_none() {
                    self.stats.warnings.push(
                        Position::Unknown,
                        format!(
                            "failed to find the call address range target: {} (filter ignored)",
                            ca.target
                        ),
                    );
                }
            }
            if let Some((start, size)) = self.call_range {
                let hit = fc
                    .frames
                    .iter()
                    .any(|f| f.addr >= start && f.addr < start.wrapping_add(size));
                if !hit {
                    return false;
                }
            }
        }
        if let Some(inc) = &o.include {
            if !inc.contains(&fc.call.index) {
                return false;
            }
        } else if let Some(exc) = &o.exclude {
            if exc.contains(&fc.call.index) {
                return false;
            }
        }
        if let Some(mask) = o.context {
            let keep = if mask == 0 {
                fc.call.context == 0
            } else {
                fc.call.context & mask != 0
            };
            if !keep {
                return false;
            }
        }
        true
    }

    fn find_call_range(&self, ca: &CallAddress) -> Option<(u64, u64)> {
        let map = self.pre.maps.iter().find(|m| m.path.contains(&ca.target))?;
        let start = if module_is_absolute(&map.path) {
            ca.start
        } else {
            ca.start.wrapping_add(map.start)
        };
        Some((start, ca.size))
    }

    fn resolve_frames(&mut self, fc: &mut FullCall) {
        let Some(res) = self.resolver.as_mut() else {
            return;
        };
        if fc.frames.is_empty() {
            return;
        }
        let frames: Vec<Frame> = fc
            .frames
            .iter()
            .map(|f| {
                let r = res.resolve(f.addr);
                let text = match (&r, &f.text) {
                    // A module we cannot read: keep what an earlier
                    // resolver (on the host that had the files) found.
                    (crate::resolve::Resolved::ModuleOnly { loaded: false, .. }, Some(old)) => {
                        old.clone()
                    }
                    _ => r.elf_text(),
                };
                Frame {
                    addr: f.addr,
                    text: Some(text),
                }
            })
            .collect();
        fc.frames = Rc::from(frames);
    }

    fn call(&mut self, mut fc: FullCall) -> Result<()> {
        if !self.keep(&mut fc) {
            return Ok(());
        }
        self.resolve_frames(&mut fc);
        let seq = self.seq;
        self.seq += 1;
        if self.opts.filter_leaks {
            let ri = self.resource_of(&fc);
            let refcount = ri.is_some_and(|i| self.pre.resources[i].is_refcount());
            let key = (ri.unwrap_or(usize::MAX), fc.call.id);
            if fc.call.is_alloc() {
                // A reused key without a free leaves the older record in
                // place as a leak.
                if let Allocated::New { .. } = self.live.alloc(key, refcount, seq) {
                    self.survivors.insert(seq, fc);
                }
            } else if let Freed::Released(s) = self.live.free(key, refcount) {
                self.survivors.remove(&s);
            }
            return Ok(());
        }
        if self.opts.compress {
            self.all.push(fc);
            return Ok(());
        }
        if !self.preamble_written {
            self.write_preamble()?;
        }
        self.write_call(&fc)?;
        self.write_frames(&fc.frames)
    }

    fn write_preamble(&mut self) -> Result<()> {
        self.preamble_written = true;
        let h = self.output_header();
        h.write(&mut self.out).map_err(io)?;
        for a in &self.pre.attachments {
            writeln!(self.out, "& {} : {}", a.name, a.path).map_err(io)?;
        }
        for c in &self.pre.contexts {
            if self.context_kept(c) {
                writeln!(self.out, "@ {:x} : {}", c.id, c.name).map_err(io)?;
            }
        }
        let visible: Vec<ResourceDef> = self.visible_resources().into_iter().cloned().collect();
        let lone = visible.len() == 1;
        for r in &visible {
            write_resource(&mut self.out, r, if lone { 1 } else { r.id }).map_err(io)?;
        }
        for m in &self.pre.maps {
            writeln!(self.out, ": {} => 0x{:x}-0x{:x}", m.path, m.start, m.end).map_err(io)?;
        }
        Ok(())
    }

    fn output_header(&self) -> Header {
        let src = &self.pre.header;
        let o = self.opts;
        let mut fields = Vec::new();
        let mut push = |k: &str, v: String| {
            fields.push(HeaderField {
                key: k.to_string(),
                value: Some(v),
            })
        };
        push("version", "2.0".to_string());
        if let Some(v) = src.get("arch") {
            push("arch", v.to_string());
        }
        if let Some(v) = src.timestamp() {
            push("timestamp", normalise_timestamp(v));
        }
        if let Some(v) = src.get("process") {
            push("process", v.to_string());
        }
        if let Some(v) = src.get("pid") {
            push("pid", parse_c_long(v).unwrap_or(0).to_string());
        }
        let old = src.filters();
        let leaks = o.filter_leaks || old.contains(&"leaks");
        let resolve = o.resolve || old.contains(&"resolve");
        let mut filter = Vec::new();
        if leaks {
            filter.push("leaks");
        }
        if o.compress {
            filter.push("compress");
        }
        if resolve {
            filter.push("resolve");
        }
        if !filter.is_empty() {
            push("filter", filter.join("|"));
        }
        match o.backtrace_depth {
            Some(d) => push("backtrace depth", d.to_string()),
            None => {
                if let Some(v) = src.get("backtrace depth") {
                    push("backtrace depth", parse_c_long(v).unwrap_or(0).to_string());
                }
            }
        }
        if let Some(v) = src.get("origin") {
            push("origin", v.to_string());
        }
        Header {
            fields,
            trailing_separator: true,
        }
    }

    fn flush_comments(&mut self, before: i64) -> Result<()> {
        while self.comments.front().is_some_and(|c| c.anchor < before) {
            if let Some(c) = self.comments.pop_front() {
                writeln!(self.out, "{}", c.text).map_err(io)?;
            }
        }
        Ok(())
    }

    fn show_types(&mut self) -> bool {
        match self.show_types {
            Some(v) => v,
            None => {
                let v = self.visible_resources().len() > 1;
                self.show_types = Some(v);
                v
            }
        }
    }

    fn write_call(&mut self, fc: &FullCall) -> Result<()> {
        if fc.call.by_number {
            // A `.tkmem` file's heap block named by its number: the text
            // has no way to say it (the leaks, `-l`, all have addresses; a
            // block whose release a filter left out does not).
            // (Raised as the input's error: the caller names the file.)
            return Err(Error::malformed(
                Position::Unknown,
                format!(
                    "call {}: a heap block freed soon after it was allocated, recorded \
                     without its address (record mem's default); sp-rtrace text names \
                     every block by its address: record with `tracekit record mem \
                     --addresses` (`-l` alone writes only leaks, which have addresses)",
                    fc.call.index
                ),
            ));
        }
        self.flush_comments(fc.call.index)?;
        if self.show_types() && fc.call.resource_type.is_none() {
            // An untagged call belongs to the first registered type.
            let mut tagged = fc.call.clone();
            tagged.resource_type = self
                .resource_of(fc)
                .map(|i| self.pre.resources[i].name.clone());
            tagged.write(&mut self.out, true).map_err(io)?;
        } else {
            let show = self.show_types();
            fc.call.write(&mut self.out, show).map_err(io)?;
        }
        for a in &fc.args {
            writeln!(self.out, "\t${} = {}", a.name, a.value).map_err(io)?;
        }
        self.stats.calls_written += 1;
        Ok(())
    }

    fn write_frames(&mut self, frames: &[Frame]) -> Result<()> {
        for f in frames {
            f.write(&mut self.out).map_err(io)?;
        }
        self.out.write_all(b"\n").map_err(io)
    }

    fn finish(&mut self) -> Result<()> {
        if !self.preamble_written {
            self.write_preamble()?;
        }
        let leak_totals = self.opts.filter_leaks.then(|| self.leak_totals());
        if self.opts.compress {
            let calls: Vec<FullCall> = if self.opts.filter_leaks {
                self.survivors_in_file_order()
            } else {
                std::mem::take(&mut self.all)
            };
            self.write_compressed(calls)?;
        } else if self.opts.filter_leaks {
            let mut calls = self.survivors_in_file_order();
            calls.sort_by_key(|c| (c.call.timestamp.unwrap_or(0), c.call.index));
            for fc in &calls {
                self.write_call(fc)?;
                self.write_frames(&fc.frames)?;
            }
        }
        self.flush_comments(i64::MAX)?;
        if let Some(totals) = leak_totals {
            self.write_leak_summary(&totals)?;
        }
        self.out.flush().map_err(io)
    }

    /// The live allocations, in the order they were read.
    fn survivors_in_file_order(&mut self) -> Vec<FullCall> {
        let mut v: Vec<(u64, FullCall)> = std::mem::take(&mut self.survivors).into_iter().collect();
        v.sort_unstable_by_key(|(seq, _)| *seq);
        v.into_iter().map(|(_, c)| c).collect()
    }

    fn write_compressed(&mut self, calls: Vec<FullCall>) -> Result<()> {
        let mut index: FxHashMap<Vec<u64>, usize> = FxHashMap::default();
        let mut groups: Vec<Group> = Vec::new();
        for fc in calls {
            let addrs: Vec<u64> = fc.frames.iter().map(|f| f.addr).collect();
            let gi = *index.entry(addrs).or_insert_with(|| {
                groups.push(Group {
                    frames: fc.frames.clone(),
                    calls: Vec::new(),
                    hash: bt_hash(&fc.frames),
                    count: 0,
                    size: 0,
                });
                groups.len() - 1
            });
            let g = &mut groups[gi];
            g.count += 1;
            g.size += fc.call.size();
            g.calls.push(fc);
        }
        // The reference walks its hash buckets in order, then merge-sorts.
        groups.sort_by_key(|g| g.hash);
        match self.opts.sort.unwrap_or(SortOrder::SizeAsc) {
            SortOrder::SizeAsc => groups.sort_by_key(|g| g.size),
            SortOrder::Size => groups.sort_by_key(|g| std::cmp::Reverse(g.size)),
            SortOrder::CountAsc => groups.sort_by_key(|g| g.count),
            SortOrder::Count => groups.sort_by_key(|g| std::cmp::Reverse(g.count)),
        }
        for g in &groups {
            for fc in &g.calls {
                self.write_call(fc)?;
            }
            writeln!(
                self.out,
                "# allocation summary: {} block(s) with total size {}",
                g.count, g.size
            )
            .map_err(io)?;
            self.write_frames(&g.frames)?;
        }
        Ok(())
    }

    /// (blocks, bytes) still allocated per registered resource type.
    fn leak_totals(&self) -> Vec<(i64, i64)> {
        let n = self.pre.resources.len();
        let mut totals = vec![(0i64, 0i64); n.max(1)];
        let survivors: Vec<(Option<usize>, i64)> = self
            .survivors
            .values()
            .map(|fc| (self.resource_of(fc), fc.call.size()))
            .collect();
        for (ri, size) in survivors {
            let t = &mut totals[ri.unwrap_or(0).min(n.max(1) - 1)];
            t.0 += 1;
            t.1 += size;
        }
        totals
    }

    fn write_leak_summary(&mut self, totals: &[(i64, i64)]) -> Result<()> {
        let visible: Vec<(usize, ResourceDef)> = self
            .pre
            .resources
            .iter()
            .enumerate()
            .filter(|(_, r)| self.resource_kept(r))
            .map(|(i, r)| (i, r.clone()))
            .collect();
        for (i, r) in visible {
            writeln!(
                self.out,
                "# Resource - {} ({}):\n# {} block(s) leaked with total size of {} bytes",
                r.name, r.description, totals[i].0, totals[i].1
            )
            .map_err(io)?;
        }
        Ok(())
    }
}

/// Registry ids are bit masks already (`<1>`, `<2>`, `<4>`).
fn resource_bit(id: u32) -> u32 {
    id
}

/// `YYYY.M.D HH:MM:SS` as the reference prints it (unpadded date).
fn normalise_timestamp(v: &str) -> String {
    let nums: Vec<i64> = v
        .split(['.', ' ', ':'])
        .filter(|s| !s.is_empty())
        .filter_map(|s| s.parse().ok())
        .collect();
    if nums.len() == 6 {
        format!(
            "{}.{}.{} {:02}:{:02}:{:02}",
            nums[0], nums[1], nums[2], nums[3], nums[4], nums[5]
        )
    } else {
        v.to_string()
    }
}

/// Non-PIE executables are resolved with absolute addresses. Without the
/// file we guess from the name (`*.so*` = relative).
fn module_is_absolute(path: &str) -> bool {
    if let Ok(data) = std::fs::read(path) {
        if let Ok(f) = object::File::parse(&*data) {
            use object::Object;
            return f.kind() == object::ObjectKind::Executable;
        }
    }
    let base = path.rsplit('/').next().unwrap_or(path);
    !(base.contains(".so") || base.starts_with('['))
}
