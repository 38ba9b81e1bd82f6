use super::*;
use std::collections::BTreeMap;

fn corpus(rel: &str) -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/corpus/trace2/"
    ))
    .join(rel)
}

fn lines_of(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    bytes.split_inclusive(|&b| b == b'\n')
}

/// The sid of a line according to serde_json (valid UTF-8 lines only).
fn reference_sid(line: &[u8]) -> Option<String> {
    let value: serde_json::Value = serde_json::from_slice(line).ok()?;
    value.get("sid")?.as_str().map(str::to_owned)
}

#[test]
fn sid_matches_serde_json_on_every_corpus_event_line() {
    let mut checked = 0;
    for entry in std::fs::read_dir(corpus("")).unwrap() {
        let path = entry.unwrap().path().join("event.jsonl");
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        for line in lines_of(&bytes) {
            let ours = scan_sid(line).expect("every git EVENT line has a sid");
            if let Some(reference) = reference_sid(line) {
                assert_eq!(ours, reference.as_bytes(), "{}", path.display());
                checked += 1;
            }
        }
    }
    assert!(checked > 3000, "only {checked} lines checked");
}

#[test]
fn sid_scanner_handles_escapes_spacing_and_order() {
    let line = br#" { "event" : "x\"sid\":\"no" , "n":[1,{"sid":"nested"}], "t":-1.5e3, "ok":true, "sid" : "a\/b\u002fc\"d\u00e9\ud83d\ude00" }"#;
    let sid = scan_sid(line).unwrap();
    assert_eq!(
        String::from_utf8(sid.to_vec()).unwrap(),
        "a/b/c\"d\u{e9}\u{1f600}"
    );
    // Every byte of a multi-byte character becomes one `_`.
    assert_eq!(session_file_name(&sid).unwrap(), "c_d______");
    // Raw non-UTF-8 bytes are kept, as git writes them.
    assert_eq!(*scan_sid(b"{\"sid\":\"x\xe9y\"}").unwrap(), b"x\xe9y"[..]);
    // Incomplete or missing: no sid, never a panic.
    for bad in [
        &b"{\"event\":\"version\",\"sid\":\"2026"[..],
        b"{\"event\":\"version\",\"sid\":",
        b"{\"event\":\"ver",
        b"{\"event\":\"x\",\"sid\":12}",
        b"{\"sid\":\"\\u12\"}",
        b"not json",
        b"",
        b"{",
        b"{\"a\":[\"]\"",
    ] {
        assert_eq!(scan_sid(bad), None, "{:?}", String::from_utf8_lossy(bad));
    }
    // A lone surrogate becomes U+FFFD.
    assert_eq!(
        scan_sid(br#"{"sid":"\ud800"}"#).unwrap(),
        "\u{fffd}".as_bytes()
    );
}

#[test]
fn sid_scanner_survives_mutated_lines_and_agrees_with_serde_when_valid() {
    let bytes = std::fs::read(corpus("04-clone-local/event.jsonl")).unwrap();
    let lines: Vec<&[u8]> = lines_of(&bytes).collect();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let alphabet = b"{}[]\"\\:,u0d8 \x80\xffsid/";
    for _ in 0..20_000 {
        let mut line = lines[next() as usize % lines.len()].to_vec();
        for _ in 0..1 + next() % 4 {
            let at = next() as usize % line.len();
            match next() % 3 {
                0 => line[at] = alphabet[next() as usize % alphabet.len()],
                1 => line.truncate(at),
                _ => line.insert(at, alphabet[next() as usize % alphabet.len()]),
            }
            if line.is_empty() {
                break;
            }
        }
        let ours = scan_sid(&line);
        if let Some(ours) = &ours {
            let _ = session_file_name(ours);
        }
        if let Some(reference) = reference_sid(&line) {
            assert_eq!(
                ours.as_deref(),
                Some(reference.as_bytes()),
                "{:?}",
                String::from_utf8_lossy(&line)
            );
        }
    }
}

#[test]
fn session_names_stay_inside_the_output_directory() {
    assert_eq!(
        session_file_name(
            b"20261121T195437.801874Z-H0a7c9cdf-P000039db/20261121T195437.9Z-H0a7c9cdf-P000039dc"
        )
        .unwrap(),
        "20261121T195437.9Z-H0a7c9cdf-P000039dc"
    );
    assert_eq!(session_file_name(b"x/..").unwrap(), "_.");
    assert_eq!(session_file_name(b"a\0b c").unwrap(), "a_b_c");
    assert_eq!(session_file_name(b"x/"), None);
    assert_eq!(session_file_name(b""), None);
}

#[test]
fn format_of_every_corpus_connection_is_detected_from_its_first_line() {
    for (dir, format) in [
        ("uds-event", Format::Event),
        ("uds-perf", Format::Perf),
        ("uds-normal", Format::Normal),
    ] {
        let dir = corpus("14-af-unix-stream").join(dir);
        let mut seen = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if !path
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("conn-")
            {
                continue;
            }
            let bytes = std::fs::read(&path).unwrap();
            let first = lines_of(&bytes).next().unwrap();
            assert_eq!(detect_format(first), format, "{}", path.display());
            // A first line cut short still says the same once the
            // bytes that differ (the ` | ` before `d<depth>`) arrived.
            for cut in 1..first.len() {
                if format == Format::Event || cut >= 47 {
                    assert_eq!(
                        detect_format(&first[..cut]),
                        format,
                        "{} cut {cut}",
                        path.display()
                    );
                }
            }
            seen += 1;
        }
        assert_eq!(seen, 8);
    }
    // Brief variants (case 12 has all *_BRIEF on).
    let brief = corpus("12-brief");
    for (file, format) in [("perf.log", Format::Perf), ("normal.log", Format::Normal)] {
        let bytes = std::fs::read(brief.join(file)).unwrap();
        let versions = lines_of(&bytes)
            .filter(|l| l.starts_with(b"version ") || l.windows(9).any(|w| w == b"| version"));
        let mut n = 0;
        for line in versions {
            assert_eq!(
                detect_format(line),
                format,
                "{file}: {:?}",
                String::from_utf8_lossy(line)
            );
            n += 1;
        }
        assert!(n > 3);
    }
}

#[test]
fn sid_timestamps_look_like_gits() {
    let t = UNIX_EPOCH + Duration::from_micros(1_795_290_877_805_171);
    assert_eq!(sid_timestamp(t), "20261121T195437.805171Z");
    assert_eq!(sid_timestamp(UNIX_EPOCH), "19700101T000000.000000Z");
    let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
    assert_eq!(sid_timestamp(leap), "20000229T000000.000000Z");
}

struct Running {
    _tmp: tempfile::TempDir,
    stream: PathBuf,
    dgram: PathBuf,
    out: PathBuf,
    stop: StopHandle,
    thread: std::thread::JoinHandle<Result<Summary>>,
}

fn start(grace: Duration) -> Running {
    let tmp = tempfile::tempdir().unwrap();
    let stream = tmp.path().join("t2.sock");
    let dgram = tmp.path().join("t2.dgram");
    let out = tmp.path().join("out");
    let receiver = Receiver::bind(Config {
        stream_socket: Some(stream.clone()),
        dgram_socket: Some(dgram.clone()),
        out_dir: Some(out.clone()),
        grace,
    })
    .unwrap();
    let stop = receiver.stop_handle();
    let thread = std::thread::spawn(move || receiver.run());
    Running {
        _tmp: tmp,
        stream,
        dgram,
        out,
        stop,
        thread,
    }
}

impl Running {
    fn finish(self) -> (PathBuf, Summary, tempfile::TempDir) {
        self.stop.stop();
        let summary = self.thread.join().unwrap().unwrap();
        assert!(
            !self.stream.exists() && !self.dgram.exists(),
            "socket files removed"
        );
        (self.out, summary, self._tmp)
    }
}

/// Every file under `dir/sub`, by name.
fn files(dir: &Path, sub: &str) -> BTreeMap<String, Vec<u8>> {
    let Ok(entries) = std::fs::read_dir(dir.join(sub)) else {
        return BTreeMap::new();
    };
    entries
        .map(|e| {
            let path = e.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&path).unwrap())
        })
        .collect()
}

fn conn_files(case_dir: &Path) -> Vec<Vec<u8>> {
    let mut names: Vec<PathBuf> = std::fs::read_dir(case_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("conn-")
        })
        .collect();
    names.sort();
    names.iter().map(|p| std::fs::read(p).unwrap()).collect()
}

#[test]
fn replayed_stream_connections_become_one_file_per_session() {
    let run = start(Duration::from_secs(5));
    let case = corpus("14-af-unix-stream");
    let mut expected_event = BTreeMap::new();
    let mut expected_other: BTreeMap<&str, Vec<Vec<u8>>> = BTreeMap::new();
    let mut total_lines = 0;
    let mut total_bytes = 0;
    let mut clients = Vec::new();
    for (format, dir) in [
        ("event", "uds-event"),
        ("perf", "uds-perf"),
        ("normal", "uds-normal"),
    ] {
        for (n, bytes) in conn_files(&case.join(dir)).into_iter().enumerate() {
            total_lines += memchr::memchr_iter(b'\n', &bytes).count() as u64;
            total_bytes += bytes.len() as u64;
            if format == "event" {
                let sid = scan_sid(&bytes).unwrap();
                expected_event.insert(session_file_name(&sid).unwrap(), bytes.clone());
            } else {
                expected_other
                    .entry(format)
                    .or_default()
                    .push(bytes.clone());
            }
            // Open all connections first, then write in odd-sized
            // pieces interleaved across connections.
            let client = UnixStream::connect(&run.stream).unwrap();
            clients.push((client, bytes, 1 + n * 7 % 97));
        }
    }
    let mut offset = vec![0; clients.len()];
    loop {
        let mut progressed = false;
        for (i, (client, bytes, step)) in clients.iter_mut().enumerate() {
            if offset[i] < bytes.len() {
                let end = (offset[i] + *step).min(bytes.len());
                client.write_all(&bytes[offset[i]..end]).unwrap();
                offset[i] = end;
                progressed = true;
            }
        }
        if !progressed {
            break;
        }
    }
    drop(clients);
    let (out, summary, _tmp) = run.finish();
    assert_eq!(files(&out, "event"), expected_event);
    for (format, mut expected) in expected_other {
        let got = files(&out, format);
        let mut got_contents: Vec<Vec<u8>> = got.values().cloned().collect();
        got_contents.sort();
        expected.sort();
        assert_eq!(got_contents, expected, "{format}");
        for name in got.keys() {
            // <YYYYMMDDTHHMMSS.uuuuuuZ>-P<pid hex8>
            assert_eq!(name.len(), 23 + 10, "{name}");
            assert!(name.contains("Z-P"), "{name}");
        }
    }
    assert_eq!(summary.lines, total_lines);
    assert_eq!(summary.bytes, total_bytes);
    assert_eq!(summary.connections, 24);
    assert_eq!(summary.sessions, 24);
    assert_eq!(summary.partial_lines, 0);
    assert!(summary.warnings.is_empty(), "{:?}", summary.warnings);
}

#[test]
fn replayed_datagrams_are_grouped_by_sid() {
    let run = start(Duration::ZERO);
    let case = corpus("15-af-unix-dgram");
    let client = UnixDatagram::unbound().unwrap();
    client.connect(&run.dgram).unwrap();
    let mut expected_event: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut expected_other = BTreeMap::new();
    let mut datagrams = 0;
    for format in ["event", "perf", "normal"] {
        let dir = case.join(format!("uds-{format}"));
        let combined = std::fs::read(dir.join("combined.txt")).unwrap();
        let tsv = std::fs::read_to_string(dir.join("datagrams.tsv")).unwrap();
        let mut at = 0;
        for row in tsv.lines().skip(1) {
            let size: usize = row.split('\t').nth(2).unwrap().parse().unwrap();
            let datagram = &combined[at..at + size];
            at += size;
            client.send(datagram).unwrap();
            datagrams += 1;
            if format == "event" {
                let name = session_file_name(&scan_sid(datagram).unwrap()).unwrap();
                expected_event
                    .entry(name)
                    .or_default()
                    .extend_from_slice(datagram);
            }
        }
        assert_eq!(at, combined.len());
        if format != "event" {
            expected_other.insert(format, combined);
        }
    }
    let (out, summary, _tmp) = run.finish();
    assert_eq!(files(&out, "event"), expected_event);
    for (format, combined) in expected_other {
        assert_eq!(
            files(&out, format),
            BTreeMap::from([("dgram".to_string(), combined)])
        );
    }
    assert_eq!(summary.datagrams, datagrams);
    assert_eq!(summary.lines, 143 + 153 + 63);
    assert_eq!(summary.sessions, expected_event_len(&out) + 2);
    assert!(summary.warnings.is_empty(), "{:?}", summary.warnings);
}

fn expected_event_len(out: &Path) -> u64 {
    files(out, "event").len() as u64
}

const SID: &str = "20261121T000000.000001Z-H0a7c9cdf-P00000001";

#[test]
fn a_client_that_vanishes_mid_line_leaves_a_terminated_counted_line() {
    let run = start(Duration::from_secs(5));
    let full = format!("{{\"event\":\"version\",\"sid\":\"{SID}\",\"evt\":\"4\"}}\n");
    let cut = format!("{{\"event\":\"start\",\"sid\":\"{SID}\",\"argv\":[\"gi");
    let mut client = UnixStream::connect(&run.stream).unwrap();
    client.write_all(full.as_bytes()).unwrap();
    client.write_all(cut.as_bytes()).unwrap();
    drop(client);
    // A client that dies before its sid is complete.
    let mut early = UnixStream::connect(&run.stream).unwrap();
    early.write_all(b"{\"event\":\"version\",\"si").unwrap();
    drop(early);
    // A PERF client cut mid-line.
    let mut perf = UnixStream::connect(&run.stream).unwrap();
    perf.write_all(b"d0 | main                     | version      |     |           |           |              | 2.47.3\nd0 | main   ").unwrap();
    drop(perf);
    let (out, summary, _tmp) = run.finish();
    let event = files(&out, "event");
    assert_eq!(event[SID], format!("{full}{cut}\n").as_bytes());
    assert_eq!(event.len(), 2);
    let (early_name, early_bytes) = event.iter().find(|(k, _)| *k != SID).unwrap();
    assert!(early_name.contains("Z-P"), "{early_name}");
    assert_eq!(early_bytes, b"{\"event\":\"version\",\"si\n");
    let perf = files(&out, "perf");
    assert_eq!(perf.len(), 1);
    assert!(perf
        .values()
        .next()
        .unwrap()
        .ends_with(b"2.47.3\nd0 | main   \n"));
    assert_eq!(summary.partial_lines, 3);
    assert_eq!(summary.lines_without_sid, 1);
    assert_eq!(summary.lines, 5);
    assert_eq!(summary.warnings.total(), 4);
}

#[test]
fn lines_longer_than_a_read_and_raw_bytes_arrive_intact() {
    let run = start(Duration::from_secs(5));
    let mut expected = Vec::new();
    for (n, size) in [(1, 10), (2, READ_CHUNK * 3 + 17), (3, 5)] {
        let mut line =
            format!("{{\"event\":\"start\",\"sid\":\"{SID}\",\"n\":{n},\"argv\":[\"").into_bytes();
        line.extend((0..size).map(|i| b"a\xe9\xff/"[i % 4]));
        line.extend_from_slice(b"\"]}\n");
        expected.extend_from_slice(&line);
    }
    let mut client = UnixStream::connect(&run.stream).unwrap();
    client.write_all(&expected).unwrap();
    drop(client);
    let (out, summary, _tmp) = run.finish();
    assert_eq!(files(&out, "event")[SID], expected);
    assert_eq!(summary.lines, 3);
    assert!(summary.warnings.is_empty());
}

#[test]
fn stopping_with_a_client_still_connected_writes_its_partial_line() {
    let run = start(Duration::ZERO);
    let mut client = UnixStream::connect(&run.stream).unwrap();
    client
        .write_all(
            format!("{{\"event\":\"version\",\"sid\":\"{SID}\"}}\n{{\"event\":\"sta").as_bytes(),
        )
        .unwrap();
    // The client stays connected while the receiver stops.
    let (out, summary, _tmp) = run.finish();
    assert_eq!(
        files(&out, "event")[SID],
        format!("{{\"event\":\"version\",\"sid\":\"{SID}\"}}\n{{\"event\":\"sta\n").as_bytes()
    );
    assert_eq!(summary.partial_lines, 1);
    assert_eq!(summary.connections, 1);
    drop(client);
}

#[test]
fn existing_files_get_git_style_suffixes_and_a_session_coming_back_appends() {
    let run = start(Duration::from_secs(5));
    std::fs::create_dir_all(run.out.join("event")).unwrap();
    std::fs::write(run.out.join("event").join(SID), b"from an earlier run\n").unwrap();
    let line = format!("{{\"event\":\"version\",\"sid\":\"{SID}\"}}\n");
    for _ in 0..2 {
        let mut client = UnixStream::connect(&run.stream).unwrap();
        client.write_all(line.as_bytes()).unwrap();
    }
    let (out, summary, _tmp) = run.finish();
    let event = files(&out, "event");
    assert_eq!(event[SID], b"from an earlier run\n");
    assert_eq!(
        event[&format!("{SID}.1")],
        format!("{line}{line}").as_bytes()
    );
    assert_eq!(summary.sessions, 1);
}

#[test]
fn bind_replaces_stale_sockets_but_nothing_else() {
    let tmp = tempfile::tempdir().unwrap();
    let sock = tmp.path().join("s");
    let config = |stream: &Path| Config {
        stream_socket: Some(stream.to_path_buf()),
        dgram_socket: None,
        out_dir: Some(tmp.path().join("out")),
        grace: Duration::ZERO,
    };
    drop(UnixListener::bind(&sock).unwrap()); // leaves a stale file
    assert!(sock.exists());
    let live = Receiver::bind(config(&sock)).unwrap();
    let err = Receiver::bind(config(&sock)).unwrap_err().to_string();
    assert!(err.contains("another process is listening"), "{err}");
    drop(live);
    assert!(
        !sock.exists(),
        "dropping an unused receiver removes its socket"
    );
    let file = tmp.path().join("plain");
    std::fs::write(&file, b"keep me").unwrap();
    let err = Receiver::bind(config(&file)).unwrap_err().to_string();
    assert!(err.contains("not a socket"), "{err}");
    assert_eq!(std::fs::read(&file).unwrap(), b"keep me");
    let same = Config {
        dgram_socket: Some(sock.clone()),
        ..config(&sock)
    };
    assert!(Receiver::bind(same).is_err());
}

#[test]
fn sockets_directories_and_files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    let run = start(Duration::from_secs(5));
    assert_eq!(mode(&run.stream), 0o600, "stream socket");
    assert_eq!(mode(&run.dgram), 0o600, "datagram socket");
    // Only the sockets, the output directory and nothing temporary.
    let names: Vec<String> = std::fs::read_dir(run.stream.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 3, "{names:?}");
    let mut client = UnixStream::connect(&run.stream).unwrap();
    client
        .write_all(format!("{{\"event\":\"version\",\"sid\":\"{SID}\"}}\n").as_bytes())
        .unwrap();
    drop(client);
    let mut perf = UnixStream::connect(&run.stream).unwrap();
    perf.write_all(b"12:00:00.000000 common-main.c:58             | d0 | main                     | version      |     |           |           |              | 2.47.3\n")
        .unwrap();
    drop(perf);
    UnixDatagram::unbound()
        .unwrap()
        .send_to(
            b"12:00:00.000000 common-main.c:58             | d0 | main                     | version      |     |           |           |              | 2.47.3\n",
            &run.dgram,
        )
        .unwrap();
    let (out, summary, _tmp) = run.finish();
    assert_eq!(summary.lines, 3);
    assert_eq!(mode(&out), 0o700);
    let mut seen = 0;
    for sub in ["event", "perf"] {
        assert_eq!(mode(&out.join(sub)), 0o700, "{sub}/");
        for e in std::fs::read_dir(out.join(sub)).unwrap() {
            let path = e.unwrap().path();
            assert_eq!(mode(&path), 0o600, "{}", path.display());
            seen += 1;
        }
    }
    assert_eq!(seen, 3, "event file, perf stream file, perf dgram file");
}

#[test]
fn chunks_continuing_a_session_and_lines_without_sid_stay_with_it() {
    const OTHER: &str = "20261121T000000.000002Z-H0a7c9cdf-P00000002";
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let mut observer = NoObserver;
    let mut state = State::new(Some(out.clone()), &mut observer);
    let (stream, _peer) = UnixStream::pair().unwrap();
    let mut conn = Conn::new(stream, 1);
    let line = |event: &str, sid: &str| format!("{{\"event\":\"{event}\",\"sid\":\"{sid}\"}}\n");
    let no_sid = "{\"event\":\"no sid\"}\n";
    // Chunks as reads cut them: the second starts with the session the
    // first ended with, the third with a line without a sid.
    let chunks = [
        line("version", SID),
        format!("{}{}{no_sid}", line("start", SID), line("version", OTHER)),
        format!("{no_sid}{}", line("atexit", OTHER)),
    ];
    for chunk in &chunks {
        conn.write_lines(&mut state, chunk.as_bytes());
    }
    drop(conn);
    let summary = state.summary;
    let written = files(&out, "event");
    assert_eq!(
        String::from_utf8_lossy(&written[SID]),
        line("version", SID) + &line("start", SID)
    );
    assert_eq!(
        String::from_utf8_lossy(&written[OTHER]),
        line("version", OTHER) + no_sid + no_sid + &line("atexit", OTHER)
    );
    assert_eq!(summary.lines, 6);
    assert_eq!(summary.lines_without_sid, 2);
    assert_eq!(summary.sessions, 2);
    assert_eq!(summary.lines_lost, 0);
}
