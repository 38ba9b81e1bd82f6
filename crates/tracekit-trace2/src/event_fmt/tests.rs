use super::*;

fn round(line: &str) {
    let ev = parse(line.as_bytes()).unwrap_or_else(|e| panic!("{e}: {line}"));
    let mut out = Vec::new();
    write(&ev, &mut out);
    assert_eq!(String::from_utf8_lossy(&out), format!("{line}\n"));
}

#[test]
fn round_trips() {
    round(
        r#"{"event":"version","sid":"20261121T195427.163686Z-H0a7c9cdf-P000032e6","thread":"main","time":"2026-11-21T19:54:27.163779Z","file":"common-main.c","line":57,"evt":"4","exe":"2.47.3"}"#,
    );
    round(r#"{"event":"data_json","sid":"s","thread":"main","t_abs":0.1,"t_rel":0.000001,"nesting":1,"category":"c","key":"k","value":{"a":[1,{"b":{}}],"c":"x\"y"}}"#.replace("0.1,", "0.100000,").as_str());
    round(r#"{"event":"error","sid":"s","thread":"main","msg":"a\nb\t\u0001é","fmt":"%s"}"#);
    round(r#"{"event":"new_thing","sid":"s","thread":"main","answer":42,"list":[1,2]}"#);
}

#[test]
fn raw_bytes_survive() {
    let line = b"{\"event\":\"start\",\"sid\":\"s\",\"thread\":\"main\",\"t_abs\":0.000416,\"argv\":[\"git\",\"add\",\"caf\xe9.txt\"]}";
    let ev = parse(line).unwrap();
    let mut out = Vec::new();
    write(&ev, &mut out);
    assert_eq!(&out[..out.len() - 1], &line[..]);
}

#[test]
fn errors_have_positions() {
    let e = parse(br#"{"event":"exit","sid":"s","t_abs":0.1"#).unwrap_err();
    assert!(e.message.contains("end of line"), "{e}");
    let e = parse(br#"{"event":"exit","code":"x","t_abs":0.1}"#).unwrap_err();
    assert_eq!(e.offset, 23);
    let e = parse(br#"{"event":"exit","t_abs":0.1}"#).unwrap_err();
    assert!(e.message.contains("without \"code\""), "{e}");
    let deep = format!(
        "{{\"event\":\"data_json\",\"value\":{}{}}}",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let e = parse(deep.as_bytes()).unwrap_err();
    assert!(e.message.contains("nested deeper"), "{e}");
    assert!(parse(b"").is_err());
    assert!(parse(b"\xff\xfe").is_err());
}
