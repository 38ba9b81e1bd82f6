//! Bear 3.1.1's configuration file (`bear --config FILE`, read by
//! `citnames`), so a Bear user's file works unchanged with
//! `tracekit record build --config` and `tracekit build spec --config`.
//!
//! ```json
//! { "compilation": {
//!     "compilers_to_recognize": [ {"executable": "/usr/bin/mpicc",
//!                                  "flags_to_add": ["-I/opt/MPI/include"],
//!                                  "flags_to_remove": ["-Wall"]} ],
//!     "compilers_to_exclude": ["/usr/bin/c++"] },
//!   "output": {
//!     "content": { "include_only_existing_source": true,
//!                  "paths_to_include": ["src"], "paths_to_exclude": ["src/test"],
//!                  "duplicate_filter_fields": "file_output" },
//!     "format":  { "command_as_array": true, "drop_output_field": false } } }
//! ```
//!
//! Every key is optional here (Bear requires `include_only_existing_source`
//! and both `format` keys once their object is present). Unknown keys are
//! reported, not fatal (Bear ignores them). Relative directories are taken
//! against the directory tracekit runs in (Bear does that with
//! `--run-checks`, which `bear -- …` always passes).

use serde_json::{Map, Value};

use crate::cdb::{absolute, CdbOptions, DuplicateKey, ExtraCompiler};

/// What a configuration file sets; `None` leaves tracekit's default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BearConfig {
    pub compilers_to_recognize: Vec<ExtraCompiler>,
    pub compilers_to_exclude: Vec<String>,
    pub include_only_existing_source: Option<bool>,
    pub paths_to_include: Vec<String>,
    pub paths_to_exclude: Vec<String>,
    pub duplicate_filter_fields: Option<DuplicateKey>,
    pub command_as_array: Option<bool>,
    pub drop_output_field: Option<bool>,
    /// Keys this version does not know (`output.format.foo`), and values
    /// it ignored, as messages.
    pub warnings: Vec<String>,
}

/// A configuration that cannot be used: the key and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

fn object<'a>(v: &'a Value, key: &str) -> Result<&'a Map<String, Value>, ConfigError> {
    v.as_object()
        .ok_or_else(|| ConfigError(format!("{key}: not an object")))
}

fn boolean(v: &Value, key: &str) -> Result<bool, ConfigError> {
    v.as_bool()
        .ok_or_else(|| ConfigError(format!("{key}: not true or false")))
}

fn strings(v: &Value, key: &str) -> Result<Vec<String>, ConfigError> {
    let arr = v
        .as_array()
        .ok_or_else(|| ConfigError(format!("{key}: not a list of strings")))?;
    arr.iter()
        .map(|x| {
            x.as_str()
                .map(str::to_string)
                .ok_or_else(|| ConfigError(format!("{key}: not a list of strings")))
        })
        .collect()
}

impl BearConfig {
    /// Parses the file's text. A JSON error names its line.
    pub fn parse(text: &str) -> Result<BearConfig, ConfigError> {
        let root: Value =
            serde_json::from_str(text).map_err(|e| ConfigError(format!("{}: {e}", e.line())))?;
        let mut c = BearConfig::default();
        for (key, v) in object(&root, "the configuration")? {
            match key.as_str() {
                "compilation" => c.compilation(v)?,
                "output" => c.output(v)?,
                other => c.unknown(other),
            }
        }
        Ok(c)
    }

    fn unknown(&mut self, key: &str) {
        self.warnings.push(format!("unknown key {key} (ignored)"));
    }

    fn compilation(&mut self, v: &Value) -> Result<(), ConfigError> {
        for (key, v) in object(v, "compilation")? {
            match key.as_str() {
                "compilers_to_recognize" => {
                    let k = "compilation.compilers_to_recognize";
                    let arr = v
                        .as_array()
                        .ok_or_else(|| ConfigError(format!("{k}: not a list")))?;
                    for (i, item) in arr.iter().enumerate() {
                        let k = format!("{k}[{i}]");
                        let mut compiler = ExtraCompiler::default();
                        for (key, v) in object(item, &k)? {
                            match key.as_str() {
                                "executable" => {
                                    compiler.executable = v
                                        .as_str()
                                        .filter(|s| !s.is_empty())
                                        .ok_or_else(|| {
                                            ConfigError(format!(
                                                "{k}.executable: not a non-empty string"
                                            ))
                                        })?
                                        .to_string()
                                }
                                "flags_to_add" => {
                                    compiler.flags_to_add =
                                        strings(v, &format!("{k}.flags_to_add"))?
                                }
                                "flags_to_remove" => {
                                    compiler.flags_to_remove =
                                        strings(v, &format!("{k}.flags_to_remove"))?
                                }
                                other => self.unknown(&format!("{k}.{other}")),
                            }
                        }
                        if compiler.executable.is_empty() {
                            return Err(ConfigError(format!("{k}: no \"executable\"")));
                        }
                        self.compilers_to_recognize.push(compiler);
                    }
                }
                "compilers_to_exclude" => {
                    self.compilers_to_exclude = strings(v, "compilation.compilers_to_exclude")?
                }
                other => self.unknown(&format!("compilation.{other}")),
            }
        }
        Ok(())
    }

    fn output(&mut self, v: &Value) -> Result<(), ConfigError> {
        for (key, v) in object(v, "output")? {
            match key.as_str() {
                "content" => {
                    for (key, v) in object(v, "output.content")? {
                        let k = format!("output.content.{key}");
                        match key.as_str() {
                            "include_only_existing_source" => {
                                self.include_only_existing_source = Some(boolean(v, &k)?)
                            }
                            "paths_to_include" => self.paths_to_include = strings(v, &k)?,
                            "paths_to_exclude" => self.paths_to_exclude = strings(v, &k)?,
                            "duplicate_filter_fields" => {
                                self.duplicate_filter_fields = match v.as_str() {
                                    Some("all") => Some(DuplicateKey::All),
                                    Some("file") => Some(DuplicateKey::File),
                                    Some("file_output") => Some(DuplicateKey::FileOutput),
                                    _ => {
                                        // Bear falls back to its default.
                                        self.warnings.push(format!(
                                            "{k}: {v} is not all, file or file_output; \
                                             file_output is used"
                                        ));
                                        None
                                    }
                                }
                            }
                            _ => self.unknown(&k),
                        }
                    }
                }
                "format" => {
                    for (key, v) in object(v, "output.format")? {
                        let k = format!("output.format.{key}");
                        match key.as_str() {
                            "command_as_array" => self.command_as_array = Some(boolean(v, &k)?),
                            "drop_output_field" => self.drop_output_field = Some(boolean(v, &k)?),
                            _ => self.unknown(&k),
                        }
                    }
                }
                other => self.unknown(&format!("output.{other}")),
            }
        }
        Ok(())
    }

    /// Sets what the file sets on `opts`; relative directories are taken
    /// against `cwd`.
    pub fn apply(&self, opts: &mut CdbOptions, cwd: &str) {
        opts.compilers
            .extend(self.compilers_to_recognize.iter().cloned());
        opts.compilers_to_exclude
            .extend(self.compilers_to_exclude.iter().cloned());
        if let Some(b) = self.include_only_existing_source {
            opts.existing_only = b;
        }
        opts.paths_to_include
            .extend(self.paths_to_include.iter().map(|p| absolute(cwd, p)));
        opts.paths_to_exclude
            .extend(self.paths_to_exclude.iter().map(|p| absolute(cwd, p)));
        if let Some(d) = self.duplicate_filter_fields {
            opts.duplicates = d;
        }
        if let Some(b) = self.command_as_array {
            opts.command_as_array = b;
        }
        if let Some(b) = self.drop_output_field {
            opts.with_output = !b;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of `man bear-citnames` (Bear 3.1.1).
    #[test]
    fn bears_example() {
        let c = BearConfig::parse(
            r#"{
              "compilation": {
                "compilers_to_recognize": [
                  { "executable": "/usr/bin/mpicc",
                    "flags_to_add": ["-I/opt/MPI/include"],
                    "flags_to_remove": ["-Wall"] } ],
                "compilers_to_exclude": [] },
              "output": {
                "content": { "include_only_existing_source": true,
                  "paths_to_include": [], "paths_to_exclude": [],
                  "duplicate_filter_fields": "file_output" },
                "format": { "command_as_array": true, "drop_output_field": false } } }"#,
        )
        .unwrap();
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
        assert_eq!(c.compilers_to_recognize[0].executable, "/usr/bin/mpicc");
        assert_eq!(c.compilers_to_recognize[0].flags_to_remove, ["-Wall"]);
        assert_eq!(c.duplicate_filter_fields, Some(DuplicateKey::FileOutput));
        let mut opts = CdbOptions::default();
        BearConfig::parse(
            r#"{"output": {"content": {"include_only_existing_source": false,
                 "paths_to_exclude": ["src/../test"]},
               "format": {"drop_output_field": true, "command_as_array": false}}}"#,
        )
        .unwrap()
        .apply(&mut opts, "/w");
        assert!(!opts.existing_only && !opts.with_output && !opts.command_as_array);
        assert_eq!(opts.paths_to_exclude, ["/w/test"]);
    }

    #[test]
    fn errors_name_the_key() {
        for (text, want) in [
            (
                r#"{"output": {"format": {"command_as_array": "yes"}}}"#,
                "output.format.command_as_array",
            ),
            (
                r#"{"compilation": {"compilers_to_recognize": [{"flags_to_add": []}]}}"#,
                "compilers_to_recognize[0]",
            ),
            (
                r#"{"compilation": {"compilers_to_exclude": [1]}}"#,
                "compilation.compilers_to_exclude",
            ),
            ("{\n\"output\": [}", "2:"),
        ] {
            let e = BearConfig::parse(text).unwrap_err();
            assert!(e.0.contains(want), "{text}: {e}");
        }
        let c = BearConfig::parse(r#"{"output": {"format": {"command_as_aray": true}}}"#).unwrap();
        assert_eq!(
            c.warnings,
            ["unknown key output.format.command_as_aray (ignored)"]
        );
    }
}
