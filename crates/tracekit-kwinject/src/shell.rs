//! Just enough of the POSIX shell to read the command lines a build prints:
//! words with their quotes removed, the operators between commands, and
//! the directory each command runs in (`cd DIR && ...`, `(cd DIR; ...)`,
//! `sh -c '...'`).
//!
//! Nothing is expanded: `$VAR`, `$(...)` and `` `...` `` stay as they are
//! written (a log holds what make printed, after make's own `$$` → `$`),
//! and a word that still holds one is marked, so a caller can say that it
//! does not know the value. Redirections (`> f`, `2>&1`) are not part of a
//! command's arguments.

/// A word or an operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    /// A word with quotes and escapes removed; `true` when it still holds
    /// an unexpanded `$` or backquote.
    Word(String, bool),
    /// `&&`, `||`, `;`, `|`, `&`, `(`, `)`, or a newline (`\n`).
    Op(&'static str),
}

/// Text a shell would not accept as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShellError {
    /// A quote (`'`, `"`, `` ` ``) or `$(` still open at the end.
    Unclosed(char),
    /// A here-document (`<<`): its body is on the following lines.
    HereDocument,
    /// A redirection without a file.
    Redirection,
}

impl std::fmt::Display for ShellError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShellError::Unclosed(c) => write!(f, "unclosed {c}"),
            ShellError::HereDocument => f.write_str("here-document (<<) not supported"),
            ShellError::Redirection => f.write_str("redirection without a file"),
        }
    }
}

fn is_op_char(c: char) -> bool {
    matches!(c, '&' | '|' | ';' | '(' | ')' | '\n')
}

/// Splits shell text into words and operators. A comment (`#` starting a
/// word) runs to the end of its line.
pub fn tokenize(text: &str) -> Result<Vec<Token>, ShellError> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let n = chars.len();
    while i < n {
        let c = chars[i];
        match c {
            ' ' | '\t' | '\r' => i += 1,
            '\\' if chars.get(i + 1) == Some(&'\n') => i += 2,
            '#' => {
                while i < n && chars[i] != '\n' {
                    i += 1;
                }
            }
            '\n' | ';' | '(' | ')' => {
                out.push(Token::Op(match c {
                    '\n' => "\n",
                    ';' => ";",
                    '(' => "(",
                    _ => ")",
                }));
                i += 1;
            }
            '&' | '|' => {
                let double = chars.get(i + 1) == Some(&c);
                if c == '&' && chars.get(i + 1) == Some(&'>') {
                    // `&>file`: both outputs to a file.
                    i = skip_redirect_target(&chars, i + 2)?;
                    continue;
                }
                out.push(Token::Op(match (c, double) {
                    ('&', true) => "&&",
                    ('&', false) => "&",
                    ('|', true) => "||",
                    _ => "|",
                }));
                i += if double { 2 } else { 1 };
            }
            '<' | '>' => i = redirection(&chars, i)?,
            _ => {
                // A word, or a redirection with a descriptor (`2>&1`).
                let mut j = i;
                while j < n && chars[j].is_ascii_digit() {
                    j += 1;
                }
                if j > i && j < n && (chars[j] == '>' || chars[j] == '<') {
                    i = redirection(&chars, j)?;
                    continue;
                }
                let (word, dollar, next) = word(&chars, i)?;
                out.push(Token::Word(word, dollar));
                i = next;
            }
        }
    }
    Ok(out)
}

/// Skips a redirection operator at `i` and its target; returns the index
/// after them.
fn redirection(chars: &[char], mut i: usize) -> Result<usize, ShellError> {
    let c = chars[i];
    i += 1;
    if c == '<' && chars.get(i) == Some(&'<') {
        return Err(ShellError::HereDocument);
    }
    if c == '>' && matches!(chars.get(i), Some('>') | Some('|')) {
        i += 1;
    }
    if chars.get(i) == Some(&'&') {
        // `>&2`, `<&-`: a descriptor, not a file.
        i += 1;
        while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '-') {
            i += 1;
        }
        return Ok(i);
    }
    skip_redirect_target(chars, i)
}

fn skip_redirect_target(chars: &[char], mut i: usize) -> Result<usize, ShellError> {
    while i < chars.len() && matches!(chars[i], ' ' | '\t') {
        i += 1;
    }
    if i >= chars.len() || is_op_char(chars[i]) || matches!(chars[i], '<' | '>') {
        return Err(ShellError::Redirection);
    }
    let (_, _, next) = word(chars, i)?;
    Ok(next)
}

/// Reads one word from `i`: returns it unquoted, whether it holds an
/// unexpanded `$` or backquote, and the index after it.
fn word(chars: &[char], mut i: usize) -> Result<(String, bool, usize), ShellError> {
    let n = chars.len();
    let mut s = String::new();
    let mut dollar = false;
    while i < n {
        let c = chars[i];
        match c {
            ' ' | '\t' | '\r' | '<' | '>' => break,
            c if is_op_char(c) => break,
            '\\' => {
                match chars.get(i + 1) {
                    Some('\n') => {}
                    Some(&x) => s.push(x),
                    None => s.push('\\'),
                }
                i += 2;
            }
            '\'' => {
                let end = (i + 1..n)
                    .find(|&k| chars[k] == '\'')
                    .ok_or(ShellError::Unclosed('\''))?;
                s.extend(&chars[i + 1..end]);
                i = end + 1;
            }
            '"' => {
                i += 1;
                loop {
                    match chars.get(i) {
                        None => return Err(ShellError::Unclosed('"')),
                        Some('"') => {
                            i += 1;
                            break;
                        }
                        Some('\\') => {
                            match chars.get(i + 1) {
                                Some('\n') => {}
                                Some(&x) if matches!(x, '$' | '`' | '"' | '\\') => s.push(x),
                                Some(&x) => {
                                    s.push('\\');
                                    s.push(x);
                                }
                                None => return Err(ShellError::Unclosed('"')),
                            }
                            i += 2;
                        }
                        Some('$') | Some('`') => {
                            dollar = true;
                            let next = substitution(chars, i, &mut s)?;
                            i = next;
                        }
                        Some(&x) => {
                            s.push(x);
                            i += 1;
                        }
                    }
                }
            }
            '$' | '`' => {
                dollar = true;
                i = substitution(chars, i, &mut s)?;
            }
            _ => {
                s.push(c);
                i += 1;
            }
        }
    }
    Ok((s, dollar, i))
}

/// Copies `$NAME`, `${...}`, `$(...)` or `` `...` `` at `i` into `s` as
/// written; returns the index after it.
fn substitution(chars: &[char], i: usize, s: &mut String) -> Result<usize, ShellError> {
    let n = chars.len();
    let (open, close, start) = match (chars[i], chars.get(i + 1)) {
        ('`', _) => ('`', '`', i + 1),
        ('$', Some('(')) => ('(', ')', i + 2),
        ('$', Some('{')) => ('{', '}', i + 2),
        _ => {
            s.push('$');
            return Ok(i + 1);
        }
    };
    let mut depth = 1;
    let mut k = start;
    while k < n {
        let c = chars[k];
        if c == '\\' {
            k += 2;
            continue;
        }
        if open == '`' {
            if c == '`' {
                depth = 0;
            }
        } else if c == '\'' {
            k = (k + 1..n)
                .find(|&m| chars[m] == '\'')
                .ok_or(ShellError::Unclosed('\''))?;
        } else if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
        }
        if depth == 0 {
            s.extend(&chars[i..=k]);
            return Ok(k + 1);
        }
        k += 1;
    }
    Err(ShellError::Unclosed(if open == '`' { '`' } else { close }))
}

/// Where a command ran, as far as the text says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dir {
    /// The directory the text started in.
    Start,
    /// Changed by `cd DIR` in the text.
    Cd,
    /// Changed by `cd` to a directory named through a variable or with
    /// no argument: not known.
    Unknown,
}

/// One simple command of a script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    /// Its arguments, `argv[0]` first (leading assignments, `env`, `exec`
    /// and `command` taken off).
    pub args: Vec<String>,
    /// Assignments before it (`CC=gcc make`, `env -u X Y=1 cmd`).
    pub assignments: Vec<(String, String)>,
    pub dir: String,
    pub how: Dir,
    /// An argument still holds an unexpanded `$` or backquote.
    pub unexpanded: bool,
}

fn is_assignment(w: &str) -> Option<(&str, &str)> {
    let (name, value) = w.split_once('=')?;
    let mut cs = name.chars();
    let first = cs.next()?;
    if (first.is_ascii_alphabetic() || first == '_')
        && cs.all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        Some((name, value))
    } else {
        None
    }
}

const KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}",
];

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Shells whose `-c SCRIPT` is read as a script of its own.
pub fn is_shell(name: &str) -> bool {
    matches!(
        file_name(name),
        "sh" | "bash" | "dash" | "zsh" | "ksh" | "mksh"
    )
}

/// The simple commands of `text`, each with the directory it runs in:
/// `cd` changes it for the rest of its (sub)shell, `( ... )` and
/// `sh -c '...'` start a subshell, and a `sh -c` script is read as well
/// (its commands follow the shell's own, which is kept too). A `for` or
/// `case` construct is not interpreted: its words read as commands.
pub fn commands(text: &str, dir: &str, how: Dir) -> Result<Vec<SimpleCommand>, ShellError> {
    let tokens = tokenize(text)?;
    let mut out = Vec::new();
    interpret(&tokens, dir.to_string(), how, 0, &mut out)?;
    Ok(out)
}

fn interpret(
    tokens: &[Token],
    dir: String,
    how: Dir,
    depth: u32,
    out: &mut Vec<SimpleCommand>,
) -> Result<(), ShellError> {
    let mut stack: Vec<(String, Dir)> = Vec::new();
    let mut cur = (dir, how);
    let mut words: Vec<(String, bool)> = Vec::new();
    let flush = |words: &mut Vec<(String, bool)>,
                 cur: &mut (String, Dir),
                 out: &mut Vec<SimpleCommand>|
     -> Result<(), ShellError> {
        let ws = std::mem::take(words);
        simple(ws, cur, depth, out)
    };
    for t in tokens {
        match t {
            Token::Word(w, d) => words.push((w.clone(), *d)),
            Token::Op("(") if words.is_empty() => {
                stack.push(cur.clone());
            }
            Token::Op(")") => {
                flush(&mut words, &mut cur, out)?;
                if let Some(prev) = stack.pop() {
                    cur = prev;
                }
            }
            Token::Op(_) => flush(&mut words, &mut cur, out)?,
        }
    }
    flush(&mut words, &mut cur, out)
}

fn simple(
    words: Vec<(String, bool)>,
    cur: &mut (String, Dir),
    depth: u32,
    out: &mut Vec<SimpleCommand>,
) -> Result<(), ShellError> {
    let mut k = 0;
    while k < words.len() && KEYWORDS.contains(&words[k].0.as_str()) {
        k += 1;
    }
    let mut assignments = Vec::new();
    loop {
        match words.get(k) {
            Some((w, _)) if is_assignment(w).is_some() => {
                if let Some((a, b)) = is_assignment(w) {
                    assignments.push((a.to_string(), b.to_string()));
                }
                k += 1;
            }
            Some((w, _)) if w == "exec" || w == "command" || w == "nohup" => k += 1,
            Some((w, _)) if file_name(w) == "env" && k + 1 < words.len() => {
                k += 1;
                while let Some((w, _)) = words.get(k) {
                    if w == "-u" || w == "--unset" {
                        k += 2;
                    } else if w == "-i" || w == "-" || w == "--ignore-environment" || w == "--" {
                        k += 1;
                    } else if let Some((a, b)) = is_assignment(w) {
                        assignments.push((a.to_string(), b.to_string()));
                        k += 1;
                    } else {
                        break;
                    }
                }
            }
            _ => break,
        }
    }
    let rest = &words[k.min(words.len())..];
    let Some((first, _)) = rest.first() else {
        return Ok(());
    };
    if first == "cd" {
        match rest.get(1) {
            Some((d, false)) if d != "-" => {
                cur.0 = crate::cdb::absolute(&cur.0, d);
                if cur.1 != Dir::Unknown {
                    cur.1 = Dir::Cd;
                }
            }
            _ => cur.1 = Dir::Unknown,
        }
        return Ok(());
    }
    let mut unexpanded = false;
    let args: Vec<String> = rest
        .iter()
        .map(|(w, d)| {
            if !*d {
                return w.clone();
            }
            match expand_file_tests(w, &cur.0) {
                Some(x) => x,
                None => {
                    unexpanded = true;
                    w.clone()
                }
            }
        })
        .collect();
    let script = match args.as_slice() {
        [sh, c, script, ..] if is_shell(sh) && c == "-c" => Some(script.clone()),
        _ => None,
    };
    out.push(SimpleCommand {
        args,
        assignments,
        dir: cur.0.clone(),
        how: cur.1.clone(),
        unexpanded,
    });
    if let Some(script) = script {
        if depth < 8 {
            let tokens = tokenize(&script)?;
            interpret(&tokens, cur.0.clone(), cur.1.clone(), depth + 1, out)?;
        }
    }
    Ok(())
}

/// automake's `` `test -f 'x.c' || echo './'`x.c `` (a source found in
/// the build directory or the source directory): each such command
/// substitution in `word` evaluated as the shell does, against the file
/// system in `dir`. `None` when the word holds any other substitution.
pub fn expand_file_tests(word: &str, dir: &str) -> Option<String> {
    let mut out = String::with_capacity(word.len());
    let mut rest = word;
    while let Some(k) = rest.find('`') {
        out.push_str(&rest[..k]);
        let inner_end = rest[k + 1..].find('`')? + k + 1;
        let inner = &rest[k + 1..inner_end];
        let tokens = tokenize(inner).ok()?;
        match tokens.as_slice() {
            [Token::Word(t, false), Token::Word(f, false), Token::Word(file, false), Token::Op("||"), Token::Word(e, false), Token::Word(alt, false)]
                if t == "test" && f == "-f" && e == "echo" =>
            {
                let path = crate::cdb::absolute(dir, file);
                if !std::path::Path::new(&path).is_file() {
                    out.push_str(alt);
                }
            }
            _ => return None,
        }
        rest = &rest[inner_end + 1..];
    }
    if rest.contains('$') {
        return None;
    }
    out.push_str(rest);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        tokenize(text)
            .unwrap()
            .into_iter()
            .map(|t| match t {
                Token::Word(w, _) => w,
                Token::Op(o) => format!("<{o}>"),
            })
            .collect()
    }

    #[test]
    fn quotes_escapes_and_operators() {
        assert_eq!(
            words(r#"cc -DX="a b" -DY='c "d"' e\ f && echo \$x >out 2>&1"#),
            ["cc", "-DX=a b", "-DY=c \"d\"", "e f", "<&&>", "echo", "$x"]
        );
        assert_eq!(words("a \\\n b"), ["a", "b"]);
        assert_eq!(
            words("(cd x; make) || true"),
            ["<(>", "cd", "x", "<;>", "make", "<)>", "<||>", "true"]
        );
        assert_eq!(
            words(r#"gcc -o `echo x`.o "$(dirname "a b")/y.c""#),
            ["gcc", "-o", "`echo x`.o", "$(dirname \"a b\")/y.c"]
        );
        assert_eq!(words("echo a # comment\nb"), ["echo", "a", "<\n>", "b"]);
        assert_eq!(tokenize("echo 'x"), Err(ShellError::Unclosed('\'')));
        assert_eq!(tokenize("cat <<EOF"), Err(ShellError::HereDocument));
        assert_eq!(tokenize("echo >"), Err(ShellError::Redirection));
    }

    #[test]
    fn directories_follow_cd_and_subshells() {
        let cmds = commands(
            "cd lib && cc -c a.c; (cd ../x && cc -c b.c); cc -c c.c; sh -c 'cd y && cc -c d.c'; cc -c e.c",
            "/w",
            Dir::Start,
        )
        .unwrap();
        let got: Vec<(&str, &str)> = cmds
            .iter()
            .map(|c| (c.args[0].as_str(), c.dir.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("cc", "/w/lib"),
                ("cc", "/w/x"),
                ("cc", "/w/lib"),
                ("sh", "/w/lib"),
                ("cc", "/w/lib/y"),
                ("cc", "/w/lib")
            ]
        );
        let cmds = commands(
            "cd $(SUB) && env -u A B=1 exec gcc -c a.c",
            "/w",
            Dir::Start,
        )
        .unwrap();
        assert_eq!(cmds[0].args, ["gcc", "-c", "a.c"]);
        assert_eq!(cmds[0].how, Dir::Unknown);
        assert_eq!(cmds[0].assignments, [("B".to_string(), "1".to_string())]);
    }

    #[test]
    fn automake_file_tests() {
        let dir = std::env::temp_dir().join(format!("tk-shell-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("here.c"), "").unwrap();
        let d = dir.to_str().unwrap();
        let cmds = commands(
            "gcc -c -o a.o `test -f 'here.c' || echo './'`here.c `test -f 'gone.c' || echo '../src/'`gone.c",
            d,
            Dir::Start,
        )
        .unwrap();
        assert_eq!(cmds[0].args[4..], ["here.c", "../src/gone.c"]);
        assert!(!cmds[0].unexpanded);
        assert_eq!(expand_file_tests("`pwd`/x.c", d), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
