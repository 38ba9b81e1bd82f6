//! Streaming readers: [`Reader`] yields one [`Record`] per line;
//! [`Assembler`] joins call lines with their arguments and backtrace into
//! [`FullCall`]s, the unit the post-processor and the reports work on.

use std::collections::VecDeque;
use std::io::BufRead;
use std::rc::Rc;

use tracekit_core::{Error, Position, Result, Warnings};

use crate::record::{
    Arg, Attachment, Call, ContextDef, Frame, Header, MemoryMap, Record, ResourceDef,
};

/// Reads a text trace line by line. The first line must be the header.
pub struct Reader<R> {
    inner: R,
    buf: Vec<u8>,
    line: u64,
    /// Problems that did not stop reading (non-UTF-8 bytes, lines that
    /// were taken as comments although they do not start with `#`).
    pub warnings: Warnings,
    /// Whether the last line lacked its `\n`.
    pub missing_final_newline: bool,
}

impl<R: BufRead> Reader<R> {
    pub fn new(inner: R) -> Self {
        Reader::starting_at(inner, 0)
    }

    /// A reader of text that continues a trace after its line `line` (the
    /// header is line 1 of the whole).
    pub fn starting_at(inner: R, line: u64) -> Self {
        Reader {
            inner,
            buf: Vec::with_capacity(256),
            line,
            warnings: Warnings::default(),
            missing_final_newline: false,
        }
    }

    /// The 1-based number of the line last returned.
    pub fn line(&self) -> u64 {
        self.line
    }

    /// The next record, `Ok(None)` at the end.
    pub fn next_record(&mut self) -> Result<Option<Record>> {
        // Fast path: the whole line is in the reader's buffer; parse it in
        // place instead of copying it out.
        let buf = self.inner.fill_buf().map_err(|e| Error::io(None, e))?;
        if let Some(nl) = memchr::memchr(b'\n', buf) {
            self.line += 1;
            let rec = classify(&buf[..nl], self.line, &mut self.warnings);
            self.inner.consume(nl + 1);
            return rec.map(Some);
        }
        self.buf.clear();
        let n = self
            .inner
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| Error::io(None, e))?;
        if n == 0 {
            if self.line == 0 {
                return Err(Error::malformed(
                    Position::Line(1),
                    "empty input: an sp-rtrace text trace starts with a header line",
                ));
            }
            return Ok(None);
        }
        self.line += 1;
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
        } else {
            self.missing_final_newline = true;
        }
        classify(&self.buf, self.line, &mut self.warnings).map(Some)
    }
}

/// Parses one line (without its `\n`); line 1 is the header.
#[inline]
fn classify(bytes: &[u8], line: u64, warnings: &mut Warnings) -> Result<Record> {
    // The two most frequent lines by far, without UTF-8 validation or
    // allocation: a bare frame and the blank line ending a backtrace.
    if line > 1 {
        if bytes.is_empty() {
            return Ok(Record::EndBacktrace);
        }
        if let Some(hex) = bytes.strip_prefix(b"\t0x") {
            if !hex.is_empty() && hex.len() <= 16 {
                let mut addr = 0u64;
                let mut ok = true;
                for &b in hex {
                    let d = match b {
                        b'0'..=b'9' => b - b'0',
                        b'a'..=b'f' => b - b'a' + 10,
                        b'A'..=b'F' => b - b'A' + 10,
                        _ => {
                            ok = false;
                            break;
                        }
                    };
                    addr = addr << 4 | u64::from(d);
                }
                if ok {
                    return Ok(Record::Frame(crate::record::Frame { addr, text: None }));
                }
            }
        }
    }
    let text = match std::str::from_utf8(bytes) {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => {
            warnings.push(Position::Line(line), "invalid UTF-8 replaced by U+FFFD");
            String::from_utf8_lossy(bytes)
        }
    };
    if line == 1 {
        return match Header::parse(&text) {
            Some(h) => Ok(Record::Header(h)),
            None => Err(Error::malformed(
                Position::Line(1),
                "not an sp-rtrace text trace: the first line must be the header \
                 (`version=2.0, arch=…, `)",
            )),
        };
    }
    let rec = Record::parse(&text);
    if let Record::Comment(c) = &rec {
        if !c.starts_with('#') {
            warnings.push(
                Position::Line(line),
                format!("unrecognised record kept as a comment: {c}"),
            );
        }
    }
    Ok(rec)
}

impl<R: BufRead> Iterator for Reader<R> {
    type Item = Result<Record>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_record().transpose()
    }
}

/// A backtrace, shared by all calls of a compressed group.
pub type Backtrace = Rc<[Frame]>;

/// A call with its arguments and backtrace.
#[derive(Debug, Clone)]
pub struct FullCall {
    pub call: Call,
    pub args: Vec<Arg>,
    pub frames: Backtrace,
    /// The line of the call record, for messages.
    pub line: u64,
}

/// What the [`Assembler`] yields: whole calls and the other records.
#[derive(Debug, Clone)]
pub enum Item {
    Header(Header),
    Call(FullCall),
    Map(MemoryMap),
    Context(ContextDef),
    Resource(ResourceDef),
    Attachment(Attachment),
    Comment(String),
    TempComment(String),
}

/// Groups call lines with the `$` and frame lines that follow them, the
/// way the reference reader does: frames after several consecutive call
/// lines (compressed form) belong to all of them.
pub struct Assembler<R> {
    pub reader: Reader<R>,
    pending: Vec<(Call, Vec<Arg>, u64)>,
    frames: Vec<Frame>,
    out: VecDeque<Item>,
    done: bool,
    empty: Backtrace,
}

impl<R: BufRead> Assembler<R> {
    pub fn new(reader: Reader<R>) -> Self {
        Assembler {
            reader,
            pending: Vec::new(),
            frames: Vec::new(),
            out: VecDeque::new(),
            done: false,
            empty: Rc::from(Vec::new()),
        }
    }

    fn flush_pending(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let frames: Backtrace = if self.frames.is_empty() {
            self.empty.clone()
        } else {
            self.frames.drain(..).collect()
        };
        for (call, args, line) in self.pending.drain(..) {
            self.out.push_back(Item::Call(FullCall {
                call,
                args,
                frames: frames.clone(),
                line,
            }));
        }
    }

    /// Any other record ends the pending calls (with an empty backtrace if
    /// no frame came).
    fn push_other(&mut self, item: Item) {
        self.flush_pending();
        self.out.push_back(item);
    }

    pub fn next_item(&mut self) -> Result<Option<Item>> {
        loop {
            if let Some(item) = self.out.pop_front() {
                return Ok(Some(item));
            }
            if self.done {
                return Ok(None);
            }
            let Some(rec) = self.reader.next_record()? else {
                self.flush_pending();
                self.done = true;
                continue;
            };
            let line = self.reader.line();
            match rec {
                Record::Frame(f) => {
                    if self.pending.is_empty() {
                        self.reader.warnings.push(
                            Position::Line(line),
                            "backtrace frame without a preceding call record (dropped)",
                        );
                    } else {
                        self.frames.push(f);
                    }
                }
                Record::Arg(a) => match self.pending.last_mut() {
                    Some((_, args, _)) => args.push(a),
                    None => self.reader.warnings.push(
                        Position::Line(line),
                        "function argument without a preceding call record (dropped)",
                    ),
                },
                // Temporary comments are invisible to the call grouping
                // (the reference drops them before classification).
                Record::TempComment(t) => self.out.push_back(Item::TempComment(t)),
                Record::Call(c) => {
                    if !self.frames.is_empty() {
                        self.flush_pending();
                    }
                    self.pending.push((c, Vec::new(), line));
                }
                Record::EndBacktrace => {
                    // The common case, one call and its frames: hand it
                    // over without going through the queue.
                    if self.pending.len() == 1 && self.out.is_empty() {
                        if let Some((call, args, line)) = self.pending.pop() {
                            let frames: Backtrace = if self.frames.is_empty() {
                                self.empty.clone()
                            } else {
                                self.frames.drain(..).collect()
                            };
                            return Ok(Some(Item::Call(FullCall {
                                call,
                                args,
                                frames,
                                line,
                            })));
                        }
                    }
                    self.flush_pending()
                }
                Record::Header(h) => self.push_other(Item::Header(h)),
                Record::Map(m) => self.push_other(Item::Map(m)),
                Record::Context(c) => self.push_other(Item::Context(c)),
                Record::Resource(r) => self.push_other(Item::Resource(r)),
                Record::Attachment(a) => self.push_other(Item::Attachment(a)),
                Record::Comment(c) => self.push_other(Item::Comment(c)),
            }
        }
    }
}

impl<R: BufRead> Iterator for Assembler<R> {
    type Item = Result<Item>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_item().transpose()
    }
}

/// A call of a recording as a pass that needs neither its function's
/// name nor its frames takes it (the report's): what its
/// [`Item::Call`] says, its backtrace named by a number that
/// [`Items::backtrace`] turns into frames. No allocation per call;
/// given in batches ([`Items::next_calls`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallEvent<'a> {
    pub index: i64,
    pub timestamp: Option<u32>,
    /// The resource type's name, as [`Call::resource_type`] has it.
    pub resource_type: Option<&'a str>,
    /// The size of an allocation; `None`: a release.
    pub alloc: Option<i64>,
    pub id: u64,
    /// The backtrace (0: none, the empty one): the same number is the
    /// same frames throughout the source.
    pub stack: u32,
}

/// What [`Items::next_calls`] gives after the calls it appended.
#[derive(Debug, Clone)]
pub enum Batch {
    /// The next item (after the calls).
    Item(Item),
    /// The calls filled the batch: more may follow.
    Full,
    /// The end of the trace.
    End,
}

/// The calls [`Items::next_calls`] appends at most (the batch's
/// capacity).
pub const CALL_BATCH: usize = 1024;

/// A trace as [`Item`]s, what every analysis reads: the [`Assembler`] of a
/// text trace, or the events of a recording
/// ([`crate::recording::Events`]: a raw recording or an image of a
/// `.tkmem` file, the same items its text would give, without the text).
pub trait Items {
    /// The next item, `Ok(None)` at the end.
    fn next_item(&mut self) -> Result<Option<Item>>;
    /// The problems met so far that did not stop reading (taken).
    fn take_warnings(&mut self) -> Warnings;
    /// From a source that has them (a recording): its next calls as
    /// [`CallEvent`]s, appended to `calls` (at most [`CALL_BATCH`]), then
    /// what comes after them. The same sequence [`Items::next_item`]
    /// gives; use one of the two throughout. Other sources give their
    /// items one at a time.
    fn next_calls(&mut self, _calls: &mut Vec<CallEvent>) -> Result<Batch> {
        Ok(match self.next_item()? {
            Some(item) => Batch::Item(item),
            None => Batch::End,
        })
    }
    /// The frames of a [`CallEvent`]'s backtrace (`None`: not known).
    fn backtrace(&mut self, _stack: u32) -> Option<Backtrace> {
        None
    }
}

impl<R: BufRead> Items for Assembler<R> {
    fn next_item(&mut self) -> Result<Option<Item>> {
        Assembler::next_item(self)
    }
    fn take_warnings(&mut self) -> Warnings {
        std::mem::take(&mut self.reader.warnings)
    }
}

impl<I: Items + ?Sized> Items for Box<I> {
    fn next_item(&mut self) -> Result<Option<Item>> {
        (**self).next_item()
    }
    fn take_warnings(&mut self) -> Warnings {
        (**self).take_warnings()
    }
    fn next_calls(&mut self, calls: &mut Vec<CallEvent>) -> Result<Batch> {
        (**self).next_calls(calls)
    }
    fn backtrace(&mut self, stack: u32) -> Option<Backtrace> {
        (**self).backtrace(stack)
    }
}

/// What the analyses take: a text trace (anything [`BufRead`], read
/// through an [`Assembler`]) or items already ([`ItemStream`]).
pub trait IntoItems {
    type Items: Items;
    fn into_items(self) -> Self::Items;
}

impl<R: BufRead> IntoItems for R {
    type Items = Assembler<R>;
    fn into_items(self) -> Assembler<R> {
        Assembler::new(Reader::new(self))
    }
}

/// Items from any source, for the analyses' [`IntoItems`] input.
pub struct ItemStream<'a>(pub Box<dyn Items + 'a>);

impl Items for ItemStream<'_> {
    fn next_item(&mut self) -> Result<Option<Item>> {
        self.0.next_item()
    }
    fn take_warnings(&mut self) -> Warnings {
        self.0.take_warnings()
    }
    fn next_calls(&mut self, calls: &mut Vec<CallEvent>) -> Result<Batch> {
        self.0.next_calls(calls)
    }
    fn backtrace(&mut self, stack: u32) -> Option<Backtrace> {
        self.0.backtrace(stack)
    }
}

impl<'a> IntoItems for ItemStream<'a> {
    type Items = ItemStream<'a>;
    fn into_items(self) -> ItemStream<'a> {
        self
    }
}
