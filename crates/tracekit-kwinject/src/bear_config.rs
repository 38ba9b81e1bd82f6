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
//!
//! Bear 4's YAML configuration (`schema: "4.0"` or `"4.1"`, `bear.yml`) is
//! read too ([`BearConfig::parse`] tells them apart: a file with a
//! `schema` key is Bear 4's), and mapped onto the same options:
//!
//! ```yaml
//! schema: "4.1"
//! compilers:                    # hints: a path and its type, or ignore
//!   - path: /usr/bin/cc
//!     as: gcc                   # gcc/gnu, clang/llvm; flang, cuda: GCC's table
//!   - path: /usr/local/bin/gcc
//!     ignore: true              # → compilers_to_exclude
//! sources:
//!   directories:                # in order; the last rule holding a source decides
//!     - path: /project/tests
//!       action: exclude
//! duplicates:
//!   match_on: [file, arguments] # directory, file, arguments, command, output
//! format:
//!   paths: {directory: canonical, file: canonical}  # as-is, absolute, canonical, relative
//!   entries: {use_array_format: true, include_output_field: true}
//! ```
//!
//! `intercept` (how Bear records) means nothing to a database made from a
//! trace or a log and is ignored. A compiler's `flags: {add, remove}` is
//! no longer in Bear 4's schema (Bear removed it before 4.0.0 and ignores
//! it); tracekit applies it, with a warning. Compiler types tracekit has
//! no flag table for (MSVC, Intel, Cray, ...) are left out, with a warning.
//! A compiler hint matches the executable's path as written (Bear 4 also
//! compares canonical paths); a bare name matches by file name.

use serde_json::{Map, Value};

use crate::cdb::{absolute, CdbOptions, DirectoryRule, DuplicateKey, ExtraCompiler, PathFormat};
use crate::compiler::Flags;

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
    /// Bear 4's schema version, when it is a Bear 4 file.
    pub schema: Option<String>,
    /// Bear 4's `sources.directories`, in order (path as written).
    pub directory_rules: Vec<(String, bool)>,
    pub file_format: Option<PathFormat>,
    pub directory_format: Option<PathFormat>,
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

/// YAML as JSON values (mapping keys must be scalars; anchors and aliases
/// are not used by Bear's configurations and are refused).
fn yaml_to_json(y: &yaml_rust2::Yaml) -> Result<Value, ConfigError> {
    use yaml_rust2::Yaml;
    Ok(match y {
        Yaml::Real(r) => r
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .unwrap_or_else(|| Value::String(r.clone())),
        Yaml::Integer(i) => Value::from(*i),
        Yaml::String(s) => Value::String(s.clone()),
        Yaml::Boolean(b) => Value::Bool(*b),
        Yaml::Array(a) => Value::Array(a.iter().map(yaml_to_json).collect::<Result<_, _>>()?),
        Yaml::Hash(h) => {
            let mut m = Map::new();
            for (k, v) in h {
                let key = match k {
                    Yaml::String(s) | Yaml::Real(s) => s.clone(),
                    Yaml::Integer(i) => i.to_string(),
                    Yaml::Boolean(b) => b.to_string(),
                    _ => return Err(ConfigError("a mapping key that is not a scalar".into())),
                };
                m.insert(key, yaml_to_json(v)?);
            }
            Value::Object(m)
        }
        Yaml::Null => Value::Null,
        Yaml::Alias(_) | Yaml::BadValue => {
            return Err(ConfigError("YAML aliases are not supported".into()))
        }
    })
}

/// A scalar as Bear 4 reads a string (`schema: 4.1` is the number 4.1 in
/// YAML, and serde reads it as the string "4.1").
fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

impl BearConfig {
    /// Parses the file's text: Bear 3's JSON, or Bear 4's YAML (a file
    /// with a `schema` key). A syntax error names its line.
    pub fn parse(text: &str) -> Result<BearConfig, ConfigError> {
        let root: Value = if text.trim_start().starts_with('{') {
            serde_json::from_str(text).map_err(|e| ConfigError(format!("{}: {e}", e.line())))?
        } else {
            let docs = yaml_rust2::YamlLoader::load_from_str(text)
                .map_err(|e| ConfigError(format!("{}: {e}", e.marker().line())))?;
            match docs.first() {
                Some(d) => yaml_to_json(d)?,
                None => Value::Object(Map::new()),
            }
        };
        if root.get("schema").is_some() {
            return Self::bear4(&root);
        }
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

    /// Bear 4's schema ("4.0" or "4.1").
    fn bear4(root: &Value) -> Result<BearConfig, ConfigError> {
        let mut c = BearConfig::default();
        let schema = root.get("schema").and_then(scalar_text).unwrap_or_default();
        if schema != "4.0" && schema != "4.1" {
            return Err(ConfigError(format!(
                "schema: unsupported schema version {schema} (Bear 4's are 4.0 and 4.1)"
            )));
        }
        c.schema = Some(schema);
        for (key, v) in object(root, "the configuration")? {
            match key.as_str() {
                "schema" | "intercept" => {}
                "compilers" => c.bear4_compilers(v)?,
                "sources" => {
                    for (key, v) in object(v, "sources")? {
                        if key != "directories" {
                            c.unknown(&format!("sources.{key}"));
                            continue;
                        }
                        let arr = v
                            .as_array()
                            .ok_or_else(|| ConfigError("sources.directories: not a list".into()))?;
                        for (i, rule) in arr.iter().enumerate() {
                            let k = format!("sources.directories[{i}]");
                            let path = rule
                                .get("path")
                                .and_then(Value::as_str)
                                .filter(|p| !p.is_empty())
                                .ok_or_else(|| {
                                    ConfigError(format!("{k}.path: not a non-empty string"))
                                })?;
                            let include = match rule.get("action").and_then(Value::as_str) {
                                Some("include") => true,
                                Some("exclude") => false,
                                _ => {
                                    return Err(ConfigError(format!(
                                        "{k}.action: not include or exclude"
                                    )))
                                }
                            };
                            c.directory_rules.push((path.to_string(), include));
                        }
                    }
                }
                "duplicates" => {
                    let fields = v
                        .get("match_on")
                        .and_then(Value::as_array)
                        .ok_or_else(|| ConfigError("duplicates.match_on: not a list".into()))?;
                    let (mut directory, mut file, mut arguments, mut output) =
                        (false, false, false, false);
                    let mut seen = std::collections::HashSet::new();
                    for (i, f) in fields.iter().enumerate() {
                        let name = f.as_str().unwrap_or("");
                        if !seen.insert(name) {
                            return Err(ConfigError(format!(
                                "duplicates.match_on[{i}]: {name} twice"
                            )));
                        }
                        match name {
                            "directory" => directory = true,
                            "file" => file = true,
                            "arguments" | "command" => arguments = true,
                            "output" => output = true,
                            _ => {
                                return Err(ConfigError(format!(
                                    "duplicates.match_on[{i}]: {f} is not directory, file, \
                                     arguments, command or output"
                                )))
                            }
                        }
                    }
                    c.duplicate_filter_fields = Some(DuplicateKey::Fields {
                        directory,
                        file,
                        arguments,
                        output,
                    });
                }
                "format" => c.bear4_format(v)?,
                other => c.unknown(other),
            }
        }
        Ok(c)
    }

    fn bear4_compilers(&mut self, v: &Value) -> Result<(), ConfigError> {
        let arr = v
            .as_array()
            .ok_or_else(|| ConfigError("compilers: not a list".into()))?;
        let mut paths = std::collections::HashSet::new();
        for (i, item) in arr.iter().enumerate() {
            let k = format!("compilers[{i}]");
            let mut compiler = ExtraCompiler::default();
            let mut ignore = false;
            let mut table = None;
            let mut known = true;
            for (key, v) in object(item, &k)? {
                match key.as_str() {
                    "path" => {
                        compiler.executable = v
                            .as_str()
                            .filter(|s| !s.is_empty())
                            .ok_or_else(|| {
                                ConfigError(format!("{k}.path: not a non-empty string"))
                            })?
                            .to_string()
                    }
                    "ignore" => ignore = boolean(v, &format!("{k}.ignore"))?,
                    "as" => {
                        let t = v.as_str().unwrap_or("").to_ascii_lowercase();
                        table = match t.as_str() {
                            "gcc" | "gnu" | "flang" | "fortran" | "gfortran" | "cuda" | "nvcc" => {
                                Some(Flags::Gcc)
                            }
                            "clang" | "llvm" => Some(Flags::Clang),
                            "intelfortran" | "intel-fortran" | "intel_fortran" | "ifort"
                            | "crayfortran" | "cray-fortran" | "cray_fortran" | "crayftn"
                            | "msvc" | "cl" | "clangcl" | "clang_cl" | "clang-cl" | "intelcc"
                            | "intel_cc" | "intel-cc" | "icx" | "nvidiahpc" | "nvidia_hpc"
                            | "nvidia-hpc" | "nvc" | "pgi" | "armclang" | "arm-clang" | "ibmxl"
                            | "ibm_xl" | "ibm-xl" | "xlclang" | "wrapper" | "ccache" | "distcc"
                            | "sccache" => {
                                known = false;
                                None
                            }
                            _ => {
                                return Err(ConfigError(format!(
                                    "{k}.as: unknown compiler type {v}"
                                )))
                            }
                        };
                    }
                    "flags" => {
                        self.warnings.push(format!(
                            "{k}.flags: not in Bear 4's schema (Bear removed it before 4.0.0 \
                             and ignores it); tracekit adds and removes these flags"
                        ));
                        for (key, v) in object(v, &format!("{k}.flags"))? {
                            match key.as_str() {
                                "add" => {
                                    compiler.flags_to_add = strings(v, &format!("{k}.flags.add"))?
                                }
                                "remove" => {
                                    compiler.flags_to_remove =
                                        strings(v, &format!("{k}.flags.remove"))?
                                }
                                other => self.unknown(&format!("{k}.flags.{other}")),
                            }
                        }
                    }
                    other => self.unknown(&format!("{k}.{other}")),
                }
            }
            if compiler.executable.is_empty() {
                return Err(ConfigError(format!("{k}: no \"path\"")));
            }
            if !paths.insert(compiler.executable.clone()) {
                return Err(ConfigError(format!(
                    "{k}: {} is named twice",
                    compiler.executable
                )));
            }
            if ignore {
                self.compilers_to_exclude.push(compiler.executable);
            } else if !known {
                self.warnings.push(format!(
                    "{k}.as: tracekit reads GCC and Clang command lines only; {} is left out",
                    compiler.executable
                ));
            } else {
                compiler.flags = table;
                self.compilers_to_recognize.push(compiler);
            }
        }
        Ok(())
    }

    fn bear4_format(&mut self, v: &Value) -> Result<(), ConfigError> {
        for (key, v) in object(v, "format")? {
            match key.as_str() {
                "paths" => {
                    for (key, v) in object(v, "format.paths")? {
                        let k = format!("format.paths.{key}");
                        let f = match v.as_str() {
                            Some("as-is") => PathFormat::AsIs,
                            Some("absolute") => PathFormat::Absolute,
                            Some("canonical") => PathFormat::Canonical,
                            Some("relative") => PathFormat::Relative,
                            _ => {
                                return Err(ConfigError(format!(
                                    "{k}: not as-is, absolute, canonical or relative"
                                )))
                            }
                        };
                        match key.as_str() {
                            "directory" => self.directory_format = Some(f),
                            "file" => self.file_format = Some(f),
                            _ => self.unknown(&k),
                        }
                    }
                }
                "entries" => {
                    for (key, v) in object(v, "format.entries")? {
                        let k = format!("format.entries.{key}");
                        match key.as_str() {
                            "use_array_format" => self.command_as_array = Some(boolean(v, &k)?),
                            "include_output_field" => {
                                self.drop_output_field = Some(!boolean(v, &k)?)
                            }
                            _ => self.unknown(&k),
                        }
                    }
                }
                other => self.unknown(&format!("format.{other}")),
            }
        }
        // Bear 4's combinations.
        use PathFormat::*;
        let d = self.directory_format.unwrap_or(AsIs);
        let f = self.file_format.unwrap_or(AsIs);
        let bad = match (d, f) {
            (Relative, Absolute | Canonical) => {
                Some("when directory is relative, file must be relative too")
            }
            (Canonical, Absolute) => Some("when directory is canonical, file can't be absolute"),
            (Absolute, Canonical) => Some("when directory is absolute, file can't be canonical"),
            (AsIs, Absolute | Relative | Canonical) => {
                Some("when directory is as-is, file should be the same")
            }
            _ => None,
        };
        match bad {
            Some(m) => Err(ConfigError(format!("format.paths: {m}"))),
            None => Ok(()),
        }
    }

    /// Sets what the file sets on `opts`; relative directories are taken
    /// against `cwd`.
    pub fn apply(&self, opts: &mut CdbOptions, cwd: &str) {
        opts.directory_rules
            .extend(
                self.directory_rules
                    .iter()
                    .map(|(p, include)| DirectoryRule {
                        path: absolute(cwd, p),
                        include: *include,
                    }),
            );
        if let Some(f) = self.file_format {
            opts.file_format = f;
        }
        if let Some(f) = self.directory_format {
            opts.directory_format = f;
        }
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

    fn bear4(name: &str) -> Result<BearConfig, ConfigError> {
        let path = format!(
            "{}/../../tests/corpus/buildtrace/bear-4-config/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        BearConfig::parse(&std::fs::read_to_string(path).unwrap())
    }

    /// Bear 4's own examples (its man page and `config` module, see the
    /// corpus README), read as Bear 4 reads them.
    #[test]
    fn bear4_examples() {
        for name in ["man-bear.1-schema-4.1.yml", "man-bear.1-schema-4.0.yml"] {
            let c = bear4(name).unwrap();
            assert!(c.warnings.is_empty(), "{name}: {:?}", c.warnings);
            assert_eq!(c.compilers_to_recognize.len(), 1);
            assert_eq!(c.compilers_to_recognize[0].executable, "/usr/bin/cc");
            assert_eq!(c.compilers_to_recognize[0].flags, Some(Flags::Gcc));
            assert_eq!(c.compilers_to_exclude, ["/usr/local/bin/gcc"]);
            assert_eq!(c.directory_rules, [("/project/tests".to_string(), false)]);
            assert_eq!(
                c.duplicate_filter_fields,
                Some(DuplicateKey::Fields {
                    directory: false,
                    file: true,
                    arguments: true,
                    output: false
                })
            );
            assert_eq!(c.file_format, Some(PathFormat::Canonical));
            assert_eq!(
                (c.command_as_array, c.drop_output_field),
                (Some(true), Some(false))
            );
        }
        // `schema: 4.1` unquoted (a YAML number), order of rules kept.
        let c = bear4("config-mod-rs-example-1.yml").unwrap();
        assert_eq!(c.schema.as_deref(), Some("4.1"));
        let names: Vec<&str> = c
            .compilers_to_recognize
            .iter()
            .map(|x| x.executable.as_str())
            .collect();
        assert_eq!(names, ["/usr/local/bin/cc", "/usr/bin/clang++"]);
        assert_eq!(c.compilers_to_recognize[1].flags, None);
        assert_eq!(
            c.directory_rules,
            [
                ("/opt/project/sources".to_string(), true),
                ("/opt/project/tests".to_string(), false)
            ]
        );
        let c = bear4("config-mod-rs-example-2.yml").unwrap();
        assert_eq!(
            (c.file_format, c.directory_format),
            (Some(PathFormat::AsIs), Some(PathFormat::AsIs))
        );
        let c = bear4("loader-rs-test_incomplete_preload_config.yml").unwrap();
        assert_eq!(c.file_format, Some(PathFormat::Absolute));
        bear4("loader-rs-test_incomplete_wrapper_config.yml").unwrap();
        // Bear 4.1 ignores `flags`; tracekit applies it and says so.
        let c = bear4("loader-rs-test_wrapper_config.yml").unwrap();
        assert_eq!(
            c.compilers_to_recognize[1].flags_to_add,
            ["-I/opt/MPI/include"]
        );
        assert_eq!(c.compilers_to_recognize[1].flags_to_remove, ["-Wall"]);
        assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
        let e = bear4("loader-rs-test_invalid_schema_version.yml").unwrap_err();
        assert!(e.0.contains("unsupported schema version 3"), "{e}");
        // Bear 4 refuses this file (no schema); it is a Bear 3 file with an
        // unknown key, which tracekit reads as such.
        let c = bear4("loader-rs-test_failing_config.json").unwrap();
        assert_eq!(c.command_as_array, Some(false));
        assert_eq!(
            c.warnings,
            ["unknown key output.content.duplicates (ignored)"]
        );
        // Mapped onto the options: the rules in order, last match wins.
        let mut opts = CdbOptions::default();
        bear4("config-mod-rs-example-1.yml")
            .unwrap()
            .apply(&mut opts, "/w");
        assert_eq!(opts.directory_rules.len(), 2);
        assert_eq!(opts.compilers_to_exclude, ["/usr/bin/cc"]);
        assert_eq!(opts.directory_format, PathFormat::Canonical);
        for (text, want) in [
            (
                "schema: 4.1\nformat: {paths: {directory: as-is, file: absolute}}\n",
                "file should be the same",
            ),
            (
                "schema: 4.1\nduplicates: {match_on: [file, file]}\n",
                "file twice",
            ),
            (
                "schema: 4.1\ncompilers: [{path: /a, as: nonesuch}]\n",
                "unknown compiler type",
            ),
            (
                "schema: 4.1\nsources: {directories: [{path: /a, action: drop}]}\n",
                "not include or exclude",
            ),
            ("schema: 4.1\n  bad: [\n", "2: "),
        ] {
            let e = BearConfig::parse(text).unwrap_err();
            assert!(e.0.contains(want), "{text}: {e}");
        }
        let c =
            BearConfig::parse("schema: '4.1'\ncompilers: [{path: /opt/x/cl, as: msvc}]\n").unwrap();
        assert!(c.compilers_to_recognize.is_empty() && c.warnings.len() == 1);
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
