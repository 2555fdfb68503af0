//! The README and the guide, kept true (docs/testing.md, "The docs check"):
//! every fenced `sh` block of README.md and docs/*.md runs, in order, one
//! working directory per page, with the built `colltune` first on the PATH
//! and `mpirun` given the project's pinning flags; a block that cannot run
//! here carries `<!-- docs-check: skip (reason) -->` on the line before it.
//! Every internal link (file and `#anchor`) of README.md, ARCHITECTURE.md,
//! docs/**/*.md and tuning-tables/**/README.md resolves, and the pages stay
//! short; no closing fence has text after its backticks; and every file
//! name a `.rs` comment or a guide page writes (as `common/mod.rs` or
//! docs/testing.md here) exists. `DOCS_CHECK=links` checks all that but runs no
//! block; `DOCS_CHECK_PAGE=runtime.md` runs one page's blocks.

mod common;

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
/// The marker line before a block that cannot run here.
const SKIP: &str = "<!-- docs-check: skip";
/// The README's and each guide page's length limit (issue 31).
const README_MAX: usize = 200;
const PAGE_MAX: usize = 400;
/// The longest line of prose (outside fenced blocks and tables): a page
/// stays under its length limit by saying less, not by longer lines.
const LINE_MAX: usize = 200;
/// A block that takes longer than this is a mistake (a real tune left
/// runnable): on CI's 2 cores every block takes seconds; the limit leaves
/// room for a loaded machine.
const BLOCK_MAX_S: u64 = 180;

/// A fenced code block: where it starts, its language, its text, and the
/// reason it is skipped (the marker's text), if it is.
struct Block {
    line: usize,
    lang: String,
    text: String,
    skip: Option<String>,
}

/// The fenced blocks of a page (fences at the start of a line).
fn blocks(md: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let lines: Vec<&str> = md.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        if let Some(lang) = lines[i].strip_prefix("```") {
            let start = i;
            let mut text = String::new();
            i += 1;
            while i < lines.len() && !lines[i].starts_with("```") {
                text.push_str(lines[i]);
                text.push('\n');
                i += 1;
            }
            let before = lines[..start].iter().rev().find(|l| !l.trim().is_empty());
            let skip = before
                .filter(|l| l.trim_start().starts_with(SKIP))
                .map(|l| l.trim().to_string());
            out.push(Block {
                line: start + 1,
                lang: lang.trim().to_string(),
                text,
                skip,
            });
        }
        i += 1;
    }
    out
}

/// The lines of a page outside fenced blocks (the fences too left out),
/// with their numbers.
fn unfenced(md: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut fenced = false;
    for (n, l) in md.lines().enumerate() {
        if l.starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            out.push((n + 1, l));
        }
    }
    out
}

/// The text of a page outside fenced blocks and inline code spans, line by
/// line (links are looked for there only).
fn prose(md: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, l) in unfenced(md) {
        let mut s = String::new();
        let mut code = false;
        for c in l.chars() {
            if c == '`' {
                code = !code;
            } else if !code {
                s.push(c);
            }
        }
        out.push((n, s));
    }
    out
}

/// GitHub's anchor of a heading: lower case, punctuation other than `-`
/// and `_` dropped, spaces to `-`; repeated headings get `-1`, `-2`, ...
fn anchors(md: &str) -> HashSet<String> {
    let mut seen: std::collections::HashMap<String, usize> = Default::default();
    let mut out = HashSet::new();
    for (_, l) in unfenced(md) {
        let t = l.trim_start();
        let hashes = t.chars().take_while(|&c| c == '#').count();
        if hashes == 0 || hashes > 6 || !t[hashes..].starts_with(' ') {
            continue;
        }
        let slug: String = t[hashes..]
            .trim()
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let n = seen.entry(slug.clone()).or_insert(0);
        out.insert(if *n == 0 {
            slug.clone()
        } else {
            format!("{slug}-{n}")
        });
        *n += 1;
    }
    out
}

/// `a/b/../c` to `a/c`, without touching the file system.
fn normalise(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// Every internal link of `page` (under `root`) that does not resolve:
/// "page:line: target: why".
fn broken_links(root: &Path, page: &Path) -> Vec<String> {
    let md = std::fs::read_to_string(root.join(page)).unwrap();
    let mut bad = Vec::new();
    for (n, l) in prose(&md) {
        let mut rest = l.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            let target = after[..end].trim();
            rest = &after[end..];
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, anchor) = match target.split_once('#') {
                Some((f, a)) => (f, Some(a)),
                None => (target, None),
            };
            let path = if file.is_empty() {
                page.to_path_buf()
            } else {
                normalise(&page.parent().unwrap_or(Path::new("")).join(file))
            };
            let full = root.join(&path);
            let say = |why: &str| format!("{}:{n}: ({target}): {why}", page.display());
            if !full.exists() {
                bad.push(say(&format!("{} does not exist", path.display())));
                continue;
            }
            if let Some(a) = anchor {
                if full.extension().is_none_or(|e| e != "md") {
                    bad.push(say("an anchor into something that is not a Markdown page"));
                } else if !anchors(&std::fs::read_to_string(&full).unwrap()).contains(a) {
                    bad.push(say(&format!("{} has no heading #{a}", path.display())));
                }
            }
        }
    }
    bad
}

/// The pages whose links are checked: README.md, ARCHITECTURE.md,
/// docs/**/*.md, tuning-tables/**/README.md (relative to the root).
fn linked_pages(root: &Path) -> Vec<PathBuf> {
    fn walk(root: &Path, dir: &Path, keep: &dyn Fn(&Path) -> bool, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(root.join(dir)) else {
            return;
        };
        let mut entries: Vec<_> = rd.flatten().map(|e| e.path()).collect();
        entries.sort();
        for p in entries {
            let rel = p.strip_prefix(root).unwrap().to_path_buf();
            if p.is_dir() {
                walk(root, &rel, keep, out);
            } else if keep(&rel) {
                out.push(rel);
            }
        }
    }
    let mut out = vec![PathBuf::from("README.md"), PathBuf::from("ARCHITECTURE.md")];
    walk(
        root,
        Path::new("docs"),
        &|p| p.extension().is_some_and(|e| e == "md"),
        &mut out,
    );
    walk(
        root,
        Path::new("tuning-tables"),
        &|p| p.ends_with("README.md"),
        &mut out,
    );
    out.retain(|p| root.join(p).exists());
    out
}

/// Fences that do not close: a line of backticks that would end a block
/// but has text after them ("``` Before ...") is no closing fence in
/// Markdown, so the block runs on and the headings after it render as
/// code. "line: why" for each.
fn fence_problems(md: &str) -> Vec<(usize, String)> {
    let mut bad = Vec::new();
    let mut open: Option<usize> = None;
    for (n, l) in md.lines().enumerate() {
        let Some(rest) = l.strip_prefix("```") else {
            continue;
        };
        match open {
            None => open = Some(n + 1),
            Some(_) if rest.trim().is_empty() => open = None,
            Some(start) => bad.push((
                n + 1,
                format!(
                    "text after the backticks that should close the block of line {start}: \
                     put the fence alone on its line"
                ),
            )),
        }
    }
    if let Some(start) = open {
        bad.push((start, "a fenced block that never closes".into()));
    }
    bad
}

/// Table rows with another count of cells than their table's header (a
/// row broken over two lines, a stray cell), as Markdown counts them:
/// every `|` not escaped, in code spans too. "line: why" for each.
fn table_problems(md: &str) -> Vec<(usize, String)> {
    let pipes = |l: &str| {
        let b = l.trim_end().as_bytes();
        (0..b.len())
            .filter(|&i| b[i] == b'|' && (i == 0 || b[i - 1] != b'\\'))
            .count()
    };
    let mut bad = Vec::new();
    // The header's line and pipes, while its table runs.
    let mut header: Option<(usize, usize)> = None;
    let mut last = 0;
    for (n, l) in unfenced(md) {
        if !l.starts_with('|') || n != last + 1 {
            header = None;
        }
        last = n;
        if !l.starts_with('|') {
            continue;
        }
        match header {
            None => header = Some((n, pipes(l))),
            Some((h, want)) if pipes(l) != want => bad.push((
                n,
                format!(
                    "a table row of {} cells under a header of {} (line {h}): one row a line, \
                     `\\|` for a bar in a cell",
                    pipes(l).saturating_sub(1),
                    want.saturating_sub(1)
                ),
            )),
            Some(_) => {}
        }
    }
    bad
}

/// Prose lines longer than [`LINE_MAX`] characters (fenced and indented
/// code blocks and table rows apart): (line, characters).
fn long_lines(md: &str) -> Vec<(usize, usize)> {
    unfenced(md)
        .into_iter()
        .filter(|(_, l)| !l.starts_with("    ") && !l.trim_start().starts_with('|'))
        .map(|(n, l)| (n, l.chars().count()))
        .filter(|&(_, len)| len > LINE_MAX)
        .collect()
}

/// The file names a text writes, with their line: words ending in `.rs`
/// or `.md` (`hot.rs`, `tests/common/mod.rs`, `docs/runtime.md`). Written
/// after `$`, `<`, `{` or `*` they are variables or patterns
/// (`$OUT_DIR/x.rs`, `<page>.md`), not names.
fn file_names(line: &str) -> Vec<String> {
    let name_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/');
    let mut out = Vec::new();
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if !name_char(chars[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && name_char(chars[i]) {
            i += 1;
        }
        let word: String = chars[start..i].iter().collect();
        let word = word.trim_end_matches('.').trim_start_matches("./");
        let marked = start > 0 && matches!(chars[start - 1], '$' | '<' | '{' | '*' | '>');
        let named = [".rs", ".md"].iter().any(|e| {
            word.strip_suffix(e).is_some_and(|stem| {
                stem.ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            })
        });
        if named && !marked && !word.contains("//") {
            out.push(word.to_string());
        }
    }
    out
}

/// Every file of the tree (relative paths), `target/` and `.git` apart.
fn tree_files(root: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            let name = e.file_name();
            if name == "target" || name == ".git" {
                continue;
            }
            if p.is_dir() {
                walk(root, &p, out);
            } else if let Ok(rel) = p.strip_prefix(root) {
                out.push(rel.to_string_lossy().into_owned());
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

/// Where a line's comment starts: the first `//` outside a string
/// literal (an even number of unescaped quotes before it), if any.
fn comment_at(line: &str) -> Option<usize> {
    let b = line.as_bytes();
    let mut quoted = false;
    let mut i = 0;
    while i + 1 < b.len() {
        match b[i] {
            b'\\' if quoted => i += 1,
            b'"' => quoted = !quoted,
            b'/' if !quoted && b[i + 1] == b'/' => return Some(i),
            _ => {}
        }
        i += 1;
    }
    None
}

/// Whether `name` is a file of the tree: a bare name anywhere, a path as
/// the end of one (`runtime/hot.rs` for `mpi/src/runtime/hot.rs`).
fn names_a_file(files: &[String], name: &str) -> bool {
    let mut name = name;
    while let Some(rest) = name.strip_prefix("../").or_else(|| name.strip_prefix("./")) {
        name = rest;
    }
    let tail = format!("/{name}");
    files.iter().any(|f| f == name || f.ends_with(&tail))
}

/// The inline code spans of a page's prose (outside fenced blocks), line
/// by line: where a page writes a file's name (links are checked apart).
fn code_spans(md: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, l) in unfenced(md) {
        for (i, span) in l.split('`').enumerate() {
            if i % 2 == 1 {
                out.push((n, span.to_string()));
            }
        }
    }
    out
}

/// File names that do not exist: in the comments of every `.rs` file
/// (after `//`) and in the code spans of the guide's pages ("file:line:
/// name"). The dated records under docs/measurements/ name files as they
/// were then, and are not read.
fn stale_file_names(root: &Path) -> Vec<String> {
    let files = tree_files(root);
    let missing = |file: &str, n: usize, name: &str| {
        (!names_a_file(&files, name))
            .then(|| format!("{file}:{n}: `{name}` does not exist (renamed, moved or gone?)"))
    };
    let mut bad = Vec::new();
    for f in files.iter().filter(|f| f.ends_with(".rs")) {
        let text = std::fs::read_to_string(root.join(f)).unwrap_or_default();
        for (n, l) in text.lines().enumerate() {
            if let Some(at) = comment_at(l) {
                for name in file_names(&l[at + 2..]) {
                    bad.extend(missing(f, n + 1, &name));
                }
            }
        }
    }
    // A page names other projects' files too (a published data set's
    // pages): only a bare `.rs` name or a path under one of this tree's
    // top-level folders is this tree's.
    let ours = |name: &str| {
        name.split_once('/')
            .map_or(name.ends_with(".rs"), |(top, _)| {
                top == ".." || root.join(top).is_dir()
            })
    };
    for page in guide_pages(root)
        .into_iter()
        .chain([PathBuf::from("ARCHITECTURE.md")])
        .chain(
            linked_pages(root)
                .into_iter()
                .filter(|p| p.starts_with("tuning-tables")),
        )
    {
        let Ok(md) = std::fs::read_to_string(root.join(&page)) else {
            continue;
        };
        for (n, span) in code_spans(&md) {
            for name in file_names(&span).into_iter().filter(|x| ours(x)) {
                bad.extend(missing(&page.to_string_lossy(), n, &name));
            }
        }
    }
    bad
}

/// The pages whose command blocks run: README.md and docs/*.md.
fn guide_pages(root: &Path) -> Vec<PathBuf> {
    let mut out = vec![PathBuf::from("README.md")];
    let mut docs: Vec<_> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .flatten()
        .map(|e| PathBuf::from("docs").join(e.file_name()))
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    out.extend(docs);
    out
}

/// Problems of the pages' form: links, lengths, skip markers without a
/// reason, command blocks in a language the check does not know.
fn form_problems(root: &Path) -> Vec<String> {
    let mut bad = Vec::new();
    for page in linked_pages(root) {
        bad.extend(broken_links(root, &page));
        let md = std::fs::read_to_string(root.join(&page)).unwrap();
        for (n, why) in fence_problems(&md).into_iter().chain(table_problems(&md)) {
            bad.push(format!("{}:{n}: {why}", page.display()));
        }
    }
    bad.extend(stale_file_names(root));
    for page in guide_pages(root) {
        let md = std::fs::read_to_string(root.join(&page)).unwrap();
        let lines = md.lines().count();
        let max = if page == Path::new("README.md") {
            README_MAX
        } else {
            PAGE_MAX
        };
        if lines > max {
            bad.push(format!(
                "{}: {lines} lines, more than {max}",
                page.display()
            ));
        }
        for (n, len) in long_lines(&md) {
            bad.push(format!(
                "{}:{n}: a line of {len} characters, more than {LINE_MAX}: wrap it",
                page.display()
            ));
        }
        for b in blocks(&md) {
            if let Some(s) = &b.skip {
                let reason = s
                    .trim_start_matches(SKIP)
                    .trim_end_matches("-->")
                    .trim()
                    .trim_start_matches('(')
                    .trim_end_matches(')')
                    .trim();
                if reason.len() < 8 {
                    bad.push(format!(
                        "{}:{}: a skipped block must say why: `{SKIP} (the reason) -->`",
                        page.display(),
                        b.line
                    ));
                }
            }
            if matches!(b.lang.as_str(), "bash" | "shell" | "console") {
                bad.push(format!(
                    "{}:{}: write command blocks as ```sh (the check runs those)",
                    page.display(),
                    b.line
                ));
            }
        }
    }
    bad
}

/// The names of the commands `colltune --help` lists (its grouped list:
/// two spaces, the name, two or more spaces, the summary).
fn listed_commands(help: &str) -> Vec<String> {
    let list = help.split("Options:").next().unwrap_or("");
    list.lines()
        .filter_map(|l| l.strip_prefix("  "))
        .filter(|l| !l.starts_with(' '))
        .filter_map(|l| l.split_once("  ").map(|(n, _)| n.trim().to_string()))
        .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_lowercase() || c == '-'))
        .collect()
}

/// Every command `colltune --help` lists has a row in the guide's command
/// table, and every `COLLTUNE_*` variable the programs read is documented:
/// a new command or variable fails here until the guide says what it does.
#[test]
fn every_command_and_variable_is_documented() {
    let o = run({
        let mut c = Command::new(colltune());
        c.arg("--help");
        c
    });
    let help = String::from_utf8_lossy(&o.stdout).to_string();
    let names = listed_commands(&help);
    assert!(
        names.len() >= 10 && names.iter().any(|n| n == "tune"),
        "parsed {names:?} from:\n{help}"
    );
    let guide = std::fs::read_to_string(Path::new(ROOT).join("docs/README.md")).unwrap();
    let mut bad: Vec<String> = names
        .iter()
        .filter(|n| !guide.contains(&format!("| `{n}")))
        .map(|n| format!("docs/README.md: no row for `{n}` in the command table (`| `{n} ...` |`)"))
        .collect();
    let mut docs = String::new();
    for p in guide_pages(Path::new(ROOT)) {
        docs.push_str(&std::fs::read_to_string(Path::new(ROOT).join(p)).unwrap());
    }
    for var in read_variables() {
        if !docs.contains(&format!("`{var}`")) {
            bad.push(format!(
                "`{var}` is read by colltune but no page of the guide names it"
            ));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The `COLLTUNE_*` names the shipped programs' sources read (tests and
/// their helpers excluded).
fn read_variables() -> std::collections::BTreeSet<String> {
    fn walk(dir: &Path, out: &mut std::collections::BTreeSet<String>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                if !p.ends_with("tests") {
                    walk(&p, out);
                }
            } else if p.extension().is_some_and(|x| x == "rs") {
                let text = std::fs::read_to_string(&p).unwrap_or_default();
                for (i, _) in text.match_indices("\"COLLTUNE_") {
                    let name: String = text[i + 1..]
                        .chars()
                        .take_while(|c| c.is_ascii_uppercase() || *c == '_' || c.is_ascii_digit())
                        .collect();
                    // A prefix alone (`starts_with("COLLTUNE_")`) is no variable.
                    if !name.ends_with('_') {
                        out.insert(name);
                    }
                }
            }
        }
    }
    let mut out = Default::default();
    for d in [
        "src",
        "mpi/src",
        "capi/src",
        "preload/src",
        "core/src",
        "algorithms/src",
    ] {
        walk(&Path::new(ROOT).join(d), &mut out);
    }
    out
}

#[test]
fn links_resolve_and_pages_are_short() {
    let bad = form_problems(Path::new(ROOT));
    assert!(bad.is_empty(), "the docs check found:\n{}", bad.join("\n"));
}

/// The checker itself: it finds a missing file, a missing anchor, an
/// over-long README and a skip without a reason, and accepts what is right.
#[test]
fn the_check_catches_what_it_should() {
    let dir = scratch("docs-check-self");
    std::fs::create_dir_all(dir.join("docs")).unwrap();
    std::fs::write(
        dir.join("README.md"),
        format!(
            "# Top\n\n[ok](docs/a.md#the-a-page-its-here) [gone](docs/none.md) [no anchor](docs/a.md#nothing)\n\
             [self](#top) `[in code](nowhere.md)` `docs/gone.md`\n\n{SKIP} -->\n```sh\nfalse\n```\n{}",
            "x\n".repeat(README_MAX)
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("docs/a.md"),
        format!(
            "# The A page: it's `here`\n\n[up](../README.md#top)\n\n{}\n\n| {} |\n",
            "word ".repeat(LINE_MAX / 5 + 1),
            "cell ".repeat(LINE_MAX / 5 + 1)
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("docs/b.md"),
        "# B\n\n```sh\ntrue\n``` text after the fence\n\n## Rendered as code\n\n```\n",
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("src/lib.rs"),
        "//! The idea (docs/a.md, src/lib.rs); see hot.rs and tests/common/gone.rs.\n\
         // $OUT_DIR/made.rs is generated, <page>.md a pattern.\nfn main() {}\n",
    )
    .unwrap();
    let bad = form_problems(&dir);
    let has = |s: &str| bad.iter().any(|b| b.contains(s));
    assert!(has("docs/none.md does not exist"), "{bad:?}");
    assert!(has("has no heading #nothing"), "{bad:?}");
    assert!(has("more than 200"), "{bad:?}");
    assert!(has("must say why"), "{bad:?}");
    assert!(has("docs/b.md:5: text after the backticks"), "{bad:?}");
    assert!(has("src/lib.rs:1: `hot.rs` does not exist"), "{bad:?}");
    assert!(
        has("src/lib.rs:1: `tests/common/gone.rs` does not exist"),
        "{bad:?}"
    );
    assert!(has("README.md:4: `docs/gone.md` does not exist"), "{bad:?}");
    assert!(has("docs/a.md:5: a line of 205 characters"), "{bad:?}");
    assert_eq!(
        bad.len(),
        9,
        "nothing else is wrong (a long table row is no prose): {bad:?}"
    );
    assert!(anchors("# The A page: it's `here`\n").contains("the-a-page-its-here"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The fence of docs/tuning.md:198 as it was (issue 47): a closing fence
/// with text after it, which left two sections and their headings as
/// code. The check refuses it, naming the line, and accepts it mended.
#[test]
fn a_fence_with_text_after_it_is_refused() {
    let was = "By hand:\n\n\
               ```\n\
               mpirun -n 4 colltune tune --collective bcast --csv l1.csv --table l1.yaml\n\
               colltune table build l1.csv l2.csv -o table.yaml\n\
               ``` Before the evidence rule, building one table\n\
               from two full launches gave 57% of the 23 sizes at 4 ranks.\n\n\
               ## Budgets, stopping and resuming\n\n\
               `--exhaustive` measures everything.\n";
    let bad = fence_problems(was);
    assert_eq!(bad.len(), 2, "{bad:?}");
    assert_eq!(bad[0].0, 6, "{bad:?}");
    assert!(bad[0].1.contains("text after the backticks"), "{bad:?}");
    assert!(bad[1].1.contains("never closes"), "{bad:?}");
    let mended = was.replace("``` Before", "```\n\nBefore");
    assert_eq!(fence_problems(&mended), vec![]);
    // An opening fence may name its language; only the closing one must be bare.
    assert_eq!(
        fence_problems("```sh\ntrue\n```\n```yaml\na: 1\n```  \n"),
        vec![]
    );
}

/// The headline table of docs/measurements/README.md as it was (issue
/// 47): a row's last cell broken onto a line of its own. The check
/// refuses both lines, and accepts the row mended and an escaped bar.
#[test]
fn a_table_row_of_other_cells_is_refused() {
    let was = "| figure | value | folder |\n|---|---|---|\n\
               | IMB | **0.521** | [a](a/README.md) | the narrative |\n\
               | [b](b/README.md) (section 3) |\n\
               | the same | 0.955 | [b](b/README.md) |\n";
    let bad = table_problems(was);
    assert_eq!(bad.len(), 2, "{bad:?}");
    assert_eq!((bad[0].0, bad[1].0), (3, 4), "{bad:?}");
    assert!(
        bad[0].1.contains("4 cells under a header of 3 (line 1)"),
        "{bad:?}"
    );
    let mended = "| figure | value | folder |\n|---|---|---|\n\
                  | IMB | **0.521** | [a](a/README.md) (the narrative), [b](b/README.md) |\n\
                  | `a\\|b` | 1 | 2 |\n\ntext | with a bar\n| another | table |\n";
    assert_eq!(table_problems(mended), vec![]);
}

/// A directory where a page's blocks run: the tree's shipped data and the
/// build visible under their usual names, nothing written into the tree.
fn workdir(name: &str, release: &Path) -> PathBuf {
    let dir = scratch(&format!("docs-{name}"));
    for entry in [
        "tuning-tables",
        "docs",
        "tests",
        "capi",
        "examples",
        "jobs",
        "benches",
    ] {
        std::os::unix::fs::symlink(Path::new(ROOT).join(entry), dir.join(entry)).unwrap();
    }
    std::os::unix::fs::symlink(release.parent().unwrap(), dir.join("target")).unwrap();
    dir
}

#[test]
fn command_blocks_run() {
    if std::env::var("DOCS_CHECK").is_ok_and(|v| v == "links") {
        eprintln!("docs check: DOCS_CHECK=links, no command block run");
        return;
    }
    // The drop-in, the C ABI library and the Rust example the pages run.
    let release = shared_libs();
    let only = std::env::var("DOCS_CHECK_PAGE").ok();
    let path = format!(
        "{}:{}",
        release.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // mpirun as the jobs run it on one machine (more ranks than cores,
    // pinned), with a watchdog: a block reads as it would on a cluster.
    let prelude = format!(
        "set -eo pipefail\n. {ROOT}/jobs/mpirun-flags.sh\n\
         mpirun() {{ command mpirun \"${{MPIRUN_FLAGS[@]}}\" --timeout 300 \"$@\"; }}\n"
    );
    let mut failures = Vec::new();
    let mut ran = 0;
    let start = Instant::now();
    for page in guide_pages(Path::new(ROOT)) {
        let name = page.file_name().unwrap().to_string_lossy().to_string();
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        let md = std::fs::read_to_string(Path::new(ROOT).join(&page)).unwrap();
        let runnable: Vec<Block> = blocks(&md)
            .into_iter()
            .filter(|b| b.lang == "sh" && b.skip.is_none())
            .collect();
        if runnable.is_empty() {
            continue;
        }
        let dir = workdir(&name.replace(".md", ""), &release);
        for b in runnable {
            let t = Instant::now();
            let mut c = Command::new("bash");
            c.arg("-c")
                .arg(format!("{prelude}{}", b.text))
                .current_dir(&dir)
                .env("PATH", &path)
                .env("COLLTUNE_PROGRESS", "none");
            for (k, _) in std::env::vars() {
                if k.starts_with("COLLTUNE_") && k != "COLLTUNE_REQUIRE" {
                    c.env_remove(&k);
                }
            }
            let o = run(c);
            ran += 1;
            let took = t.elapsed();
            eprintln!(
                "docs check: {}:{} ran in {:.1} s",
                page.display(),
                b.line,
                took.as_secs_f64()
            );
            if !o.status.success() {
                failures.push(format!(
                    "{}:{}: the block failed ({}):\n{}\n{}",
                    page.display(),
                    b.line,
                    o.status,
                    b.text,
                    text(&o)
                ));
            } else if took > Duration::from_secs(BLOCK_MAX_S) {
                failures.push(format!(
                    "{}:{}: the block took {:.0} s: make it smaller (CI's budget), or skip it with a reason",
                    page.display(),
                    b.line,
                    took.as_secs_f64()
                ));
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    eprintln!(
        "docs check: {ran} command blocks in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(
        only.is_some() || ran >= 10,
        "only {ran} command blocks ran: is the parser broken?"
    );
}

/// The raw CSV's header in docs/methodology.md is the one colltune writes
/// (`simulate` writes bench's format).
#[test]
fn the_documented_csv_header_is_written() {
    let md = std::fs::read_to_string(Path::new(ROOT).join("docs/methodology.md")).unwrap();
    let documented = blocks(&md)
        .into_iter()
        .find(|b| b.text.starts_with("collective,algorithm,"))
        .expect("docs/methodology.md shows the raw CSV's header in a block of its own")
        .text;
    let dir = scratch("docs-csv-header");
    let csv = dir.join("raw.csv");
    let mut c = Command::new(colltune());
    c.args(["simulate", "--model"])
        .arg(Path::new(ROOT).join("tuning-tables/models/test-ib.yaml"))
        .args([
            "--ranks",
            "4",
            "--ppn",
            "2",
            "--sizes",
            "1",
            "--summary-only",
            "--csv",
        ])
        .arg(&csv);
    let o = run(c);
    assert!(o.status.success(), "{}", text(&o));
    let written = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(
        documented.trim(),
        written.lines().next().unwrap_or(""),
        "docs/methodology.md's Raw CSV header differs from the one colltune writes"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
