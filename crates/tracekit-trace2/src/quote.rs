//! git's "pretty" shell quoting (`sq_quote_buf_pretty`), used by NORMAL and
//! PERF for argv and paths, and its inverse.

use std::borrow::Cow;

use crate::event::Text;

fn is_safe(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"+,-./:=@_^".contains(&c)
}

/// Appends `s` quoted the way git does: verbatim if every byte is safe,
/// `''` if empty, otherwise in single quotes with `'` as `'\''` and `!` as
/// `'\!'`.
pub fn sq_quote(out: &mut Vec<u8>, s: &[u8]) {
    if s.is_empty() {
        out.extend_from_slice(b"''");
        return;
    }
    if s.iter().all(|&c| is_safe(c)) {
        out.extend_from_slice(s);
        return;
    }
    out.push(b'\'');
    for &c in s {
        match c {
            b'\'' => out.extend_from_slice(b"'\\''"),
            b'!' => out.extend_from_slice(b"'\\!'"),
            c => out.push(c),
        }
    }
    out.push(b'\'');
}

/// Appends the elements quoted and joined by single spaces.
pub fn sq_quote_argv<T: AsRef<[u8]>>(out: &mut Vec<u8>, argv: &[T]) {
    for (i, a) in argv.iter().enumerate() {
        if i > 0 {
            out.push(b' ');
        }
        sq_quote(out, a.as_ref());
    }
}

/// Splits a space-joined, git-quoted argv back into its elements. Returns
/// `None` if the text is not something git's quoting could have produced
/// (an unterminated quote).
pub fn sq_split(s: &[u8]) -> Option<Vec<Text<'_>>> {
    let mut out = Vec::new();
    if s.is_empty() {
        return Some(out);
    }
    let mut i = 0;
    loop {
        // One word: bare runs, '...' runs and \X escapes until a space.
        let start = i;
        let mut owned: Option<Vec<u8>> = None;
        while i < s.len() && s[i] != b' ' {
            match s[i] {
                b'\'' => {
                    let close = memchr::memchr(b'\'', &s[i + 1..])? + i + 1;
                    owned
                        .get_or_insert_with(|| s[start..i].to_vec())
                        .extend_from_slice(&s[i + 1..close]);
                    i = close + 1;
                }
                b'\\' if i + 1 < s.len() => {
                    owned
                        .get_or_insert_with(|| s[start..i].to_vec())
                        .push(s[i + 1]);
                    i += 2;
                }
                c => {
                    if let Some(o) = owned.as_mut() {
                        o.push(c);
                    }
                    i += 1;
                }
            }
        }
        out.push(match owned {
            Some(o) => Cow::Owned(o),
            None => Cow::Borrowed(&s[start..i]),
        });
        if i >= s.len() {
            return Some(out);
        }
        i += 1; // the separating space
    }
}

/// Unquotes a single quoted element (a path).
pub fn sq_unquote(s: &[u8]) -> Option<Text<'_>> {
    let mut v = sq_split(s)?;
    if v.len() == 1 {
        v.pop()
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_like_git() {
        let mut out = Vec::new();
        sq_quote_argv(
            &mut out,
            &[
                &b"git"[..],
                b"commit",
                b"-m",
                b"it's",
                b"",
                b"!echo hi",
                b"a b",
            ],
        );
        assert_eq!(
            String::from_utf8_lossy(&out),
            r"git commit -m 'it'\''s' '' ''\!'echo hi' 'a b'"
        );
        let back = sq_split(&out).unwrap();
        let back: Vec<&[u8]> = back.iter().map(|c| &**c).collect();
        assert_eq!(
            back,
            vec![
                &b"git"[..],
                b"commit",
                b"-m",
                b"it's",
                b"",
                b"!echo hi",
                b"a b"
            ]
        );
    }

    #[test]
    fn unterminated_quote_is_refused() {
        assert!(sq_split(b"'abc").is_none());
    }
}
