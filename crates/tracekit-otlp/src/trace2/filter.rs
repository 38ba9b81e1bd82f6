//! What a fleet keeps, at which detail, and what it hides: the forwarder's
//! configuration, from flags and/or a JSON file.
//!
//! ```json
//! {
//!   "keep": ["fetch", "clone", "push"],
//!   "drop": ["git:status"],
//!   "detail": "dl:verbose",
//!   "commands": { "git:gc": "dl:summary", "git:checkout#path": "dl:drop" },
//!   "nickname_key": "otel.trace2.nickname",
//!   "nicknames": { "monorepo": "dl:verbose", "personal": "dl:drop" },
//!   "redact": {
//!     "url_credentials": true,
//!     "patterns": [ { "match": "/home/[^/]+", "replace": "/home/<user>" } ]
//!   },
//!   "resource": { "host": true, "user": true }
//! }
//! ```
//!
//! * `keep`/`drop` decide per **session**, by its top-level command (the
//!   topmost process of the session the receiver saw): with `keep`, only
//!   sessions whose command matches one pattern are sent; `drop` removes
//!   matching ones. The child processes of a kept `git fetch`
//!   (`git-remote-https`, `index-pack`) go with it.
//! * A pattern matches a process when it equals one of its qualified names
//!   as trace2receiver spells them, `<exe>:<verb>#<mode>`, `<exe>:<verb>`,
//!   `<exe>` (`git:checkout#branch`, `git:checkout`, `git`), or its bare
//!   verb (`checkout`).
//! * Detail levels are trace2receiver's: `dl:drop` (nothing),
//!   `dl:summary` (the process span: lifetime, argv, exit code, errors),
//!   `dl:process` (+ process data, timers and counters, ancestry, aliases,
//!   child and exec spans), `dl:verbose` (+ thread and region spans; the
//!   default here, where trace2receiver's is `dl:summary`). Per process,
//!   most specific first: the repo's nickname (`nickname_key`, a config
//!   key git reports through `trace2.configParams`) in `nicknames`, then
//!   `commands` by `<exe>:<verb>#<mode>`, `<exe>:<verb>`, `<exe>`, then
//!   `detail`.
//! * `redact`: credentials in URLs (on unless turned off) and patterns
//!   (regular expressions, `$1` groups in the replacement), applied to every
//!   string before it leaves the machine.
//! * `resource`: `host.name` and `user.name` (the user of the git process,
//!   from the socket's peer credentials) as resource attributes (and as
//!   trace2receiver's `trace2.pii.hostname`/`username` span attributes).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

/// trace2receiver's detail levels, least to most.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Detail {
    Drop,
    Summary,
    Process,
    Verbose,
}

impl Detail {
    /// `dl:summary` or `summary`.
    pub fn parse(s: &str) -> Result<Detail, String> {
        match s.strip_prefix("dl:").unwrap_or(s) {
            "drop" => Ok(Detail::Drop),
            "summary" => Ok(Detail::Summary),
            "process" => Ok(Detail::Process),
            "verbose" => Ok(Detail::Verbose),
            _ => Err(format!(
                "{s:?}: not a detail level (dl:drop, dl:summary, dl:process, dl:verbose)"
            )),
        }
    }

    pub fn region_and_thread_spans(self) -> bool {
        self == Detail::Verbose
    }

    /// Child and exec spans, ancestry, aliases, process data/timers/counters.
    pub fn process_details(self) -> bool {
        self >= Detail::Process
    }
}

/// A redaction pattern of the config file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pattern {
    #[serde(rename = "match")]
    pub pattern: String,
    #[serde(default)]
    pub replace: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedactConfig {
    #[serde(default = "yes")]
    pub url_credentials: bool,
    #[serde(default)]
    pub patterns: Vec<Pattern>,
}

impl Default for RedactConfig {
    fn default() -> Self {
        RedactConfig {
            url_credentials: true,
            patterns: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceConfig {
    #[serde(default = "yes")]
    pub host: bool,
    #[serde(default = "yes")]
    pub user: bool,
}

impl Default for ResourceConfig {
    fn default() -> Self {
        ResourceConfig {
            host: true,
            user: true,
        }
    }
}

fn yes() -> bool {
    true
}

/// The forwarder's filter configuration; see the module docs.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilterConfig {
    #[serde(default)]
    pub keep: Vec<String>,
    #[serde(default)]
    pub drop: Vec<String>,
    #[serde(default)]
    pub detail: Option<String>,
    #[serde(default)]
    pub commands: BTreeMap<String, String>,
    #[serde(default)]
    pub nickname_key: Option<String>,
    #[serde(default)]
    pub nicknames: BTreeMap<String, String>,
    #[serde(default)]
    pub redact: RedactConfig,
    #[serde(default)]
    pub resource: ResourceConfig,
}

impl FilterConfig {
    /// Reads a JSON configuration file (its detail levels are checked by
    /// [`FilterConfig::compile`]).
    pub fn load(path: &Path) -> Result<FilterConfig, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        serde_json::from_slice(&bytes)
            .map_err(|e| format!("{}:{}:{}: {e}", path.display(), e.line(), e.column()))
    }

    /// Checks the detail level names; the compiled rules.
    pub fn compile(&self) -> Result<Rules, String> {
        let detail = match &self.detail {
            Some(d) => Detail::parse(d)?,
            None => Detail::Verbose,
        };
        let parse_map = |m: &BTreeMap<String, String>| {
            m.iter()
                .map(|(k, v)| Detail::parse(v).map(|d| (k.clone(), d)))
                .collect::<Result<BTreeMap<_, _>, _>>()
        };
        Ok(Rules {
            keep: self.keep.clone(),
            drop: self.drop.clone(),
            detail,
            commands: parse_map(&self.commands)?,
            nickname_key: self.nickname_key.clone(),
            nicknames: parse_map(&self.nicknames)?,
        })
    }
}

/// A process's names as trace2receiver qualifies them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QualifiedNames {
    /// `git`, `git-remote-https` (argv[0]'s base name, `.exe` stripped).
    pub exe: String,
    /// `git:checkout`.
    pub exe_verb: String,
    /// `git:checkout#branch`.
    pub exe_verb_mode: String,
    /// `checkout` (the `cmd_name`).
    pub verb: String,
}

/// [`FilterConfig`] checked and ready.
#[derive(Debug, Clone)]
pub struct Rules {
    pub keep: Vec<String>,
    pub drop: Vec<String>,
    pub detail: Detail,
    pub commands: BTreeMap<String, Detail>,
    pub nickname_key: Option<String>,
    pub nicknames: BTreeMap<String, Detail>,
}

impl Default for Rules {
    fn default() -> Self {
        Rules {
            keep: Vec::new(),
            drop: Vec::new(),
            detail: Detail::Verbose,
            commands: BTreeMap::new(),
            nickname_key: None,
            nicknames: BTreeMap::new(),
        }
    }
}

fn matches(pattern: &str, q: &QualifiedNames) -> bool {
    pattern == q.exe_verb_mode
        || pattern == q.exe_verb
        || pattern == q.exe
        || (!q.verb.is_empty() && pattern == q.verb)
}

impl Rules {
    /// Whether a session whose top-level process has these names is sent.
    pub fn keeps_session(&self, top: &QualifiedNames) -> bool {
        if !self.keep.is_empty() && !self.keep.iter().any(|p| matches(p, top)) {
            return false;
        }
        !self.drop.iter().any(|p| matches(p, top))
    }

    /// The detail level of one process; `nickname` is the value of
    /// `nickname_key` among its `def_param`s.
    pub fn detail(&self, q: &QualifiedNames, nickname: Option<&str>) -> Detail {
        if let Some(d) = nickname.and_then(|n| self.nicknames.get(n)) {
            return *d;
        }
        for key in [&q.exe_verb_mode, &q.exe_verb, &q.exe] {
            if let Some(d) = self.commands.get(key) {
                return *d;
            }
        }
        self.detail
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(exe: &str, verb: &str, mode: &str) -> QualifiedNames {
        let exe_verb = if verb.is_empty() {
            exe.to_string()
        } else {
            format!("{exe}:{verb}")
        };
        let exe_verb_mode = if mode.is_empty() {
            exe_verb.clone()
        } else {
            format!("{exe_verb}#{mode}")
        };
        QualifiedNames {
            exe: exe.into(),
            exe_verb,
            exe_verb_mode,
            verb: verb.into(),
        }
    }

    #[test]
    fn keep_drop_and_detail_most_specific_first() {
        let config: FilterConfig = serde_json::from_str(
            r#"{"keep": ["fetch", "git:clone"], "drop": ["git:fetch#x"],
                "detail": "process",
                "commands": {"git:checkout#path": "dl:drop", "git:checkout": "dl:verbose", "git": "dl:summary"},
                "nickname_key": "otel.trace2.nickname", "nicknames": {"mono": "dl:verbose"}}"#,
        )
        .unwrap();
        let r = config.compile().unwrap();
        assert!(r.keeps_session(&q("git", "fetch", "")));
        assert!(r.keeps_session(&q("git", "clone", "")));
        assert!(!r.keeps_session(&q("git", "status", "")));
        assert!(!r.keeps_session(&q("git", "fetch", "x")));
        assert_eq!(r.detail(&q("git", "checkout", "path"), None), Detail::Drop);
        assert_eq!(
            r.detail(&q("git", "checkout", "branch"), None),
            Detail::Verbose
        );
        assert_eq!(r.detail(&q("git", "status", ""), None), Detail::Summary);
        assert_eq!(
            r.detail(&q("git", "status", ""), Some("mono")),
            Detail::Verbose
        );
        assert_eq!(r.detail(&q("scalar", "", ""), None), Detail::Process);
        let bad: FilterConfig = serde_json::from_str(r#"{"detail": "dl:loud"}"#).unwrap();
        assert!(bad.compile().unwrap_err().contains("not a detail level"));
        assert!(serde_json::from_str::<FilterConfig>(r#"{"kep": []}"#).is_err());
    }
}
