//! Redaction of text before it leaves the machine: credentials in URLs
//! (on by default) and user patterns (regular expressions with a
//! replacement, e.g. home directories), applied to every string a span
//! carries: names, attribute values, event attributes, resource values.

use std::borrow::Cow;

use regex::Regex;

/// What replaces the user information of a URL
/// (`https://user:secret@host` becomes `https://<REDACTED>@host`; git
/// 2.44+ writes the same marker for the password alone).
pub const URL_CREDENTIALS_MARKER: &str = "<REDACTED>";

/// A set of redaction rules, applied in order.
#[derive(Debug, Clone)]
pub struct Redactor {
    /// The pattern and its replacement (built once, not per string).
    url_credentials: Option<(Regex, String)>,
    rules: Vec<(Regex, String)>,
}

impl Default for Redactor {
    fn default() -> Self {
        Redactor::none()
    }
}

impl Redactor {
    /// Leaves everything as it is.
    pub fn none() -> Self {
        Redactor {
            url_credentials: None,
            rules: Vec::new(),
        }
    }

    /// `url_credentials`: replace `scheme://userinfo@` by
    /// `scheme://<REDACTED>@`; `rules`: (regular expression, replacement
    /// with `$1`-style groups), applied after it, in order.
    pub fn new(url_credentials: bool, rules: &[(String, String)]) -> Result<Self, String> {
        let url_credentials = url_credentials.then(|| {
            // userinfo: anything but the characters that end an authority.
            let re = Regex::new(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/?#@\s]+@").expect("valid regex");
            (re, format!("${{1}}{URL_CREDENTIALS_MARKER}@"))
        });
        let rules = rules
            .iter()
            .map(|(pattern, replacement)| {
                Regex::new(pattern)
                    .map(|re| (re, replacement.clone()))
                    .map_err(|e| format!("redaction pattern {pattern:?}: {e}"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Redactor {
            url_credentials,
            rules,
        })
    }

    /// `s` with every rule applied.
    pub fn apply<'a>(&self, s: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(s);
        if let Some((re, replacement)) = &self.url_credentials {
            if let Cow::Owned(o) = re.replace_all(&out, replacement.as_str()) {
                out = Cow::Owned(o);
            }
        }
        for (re, replacement) in &self.rules {
            if let Cow::Owned(o) = re.replace_all(&out, replacement.as_str()) {
                out = Cow::Owned(o);
            }
        }
        out
    }

    /// Bytes as text (invalid UTF-8 replaced, as OTLP strings must be
    /// UTF-8), redacted.
    pub fn text(&self, bytes: &[u8]) -> String {
        let s = String::from_utf8_lossy(bytes);
        match self.apply(&s) {
            Cow::Borrowed(_) => s.into_owned(),
            Cow::Owned(o) => o,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_credentials_and_patterns() {
        let r = Redactor::new(
            true,
            &[(r"/home/[^/\s]+".to_string(), "/home/<user>".to_string())],
        )
        .unwrap();
        assert_eq!(
            r.apply("git fetch https://bob:s3cret@example.com/x.git"),
            "git fetch https://<REDACTED>@example.com/x.git"
        );
        assert_eq!(
            r.apply("https://bob:<REDACTED>@127.0.0.1:9/x.git"),
            "https://<REDACTED>@127.0.0.1:9/x.git"
        );
        assert_eq!(
            r.apply("ssh://git@host/repo and /home/alice/src"),
            "ssh://<REDACTED>@host/repo and /home/<user>/src"
        );
        // No userinfo, nothing to do; an @ in a path is not userinfo.
        assert!(matches!(
            r.apply("https://example.com/a@b"),
            Cow::Borrowed(_)
        ));
        assert_eq!(r.text(b"x\xff /home/bob"), "x\u{fffd} /home/<user>");
        assert!(Redactor::new(false, &[("(".into(), String::new())]).is_err());
        assert!(matches!(
            Redactor::none().apply("https://a:b@h/"),
            Cow::Borrowed(_)
        ));
    }
}
