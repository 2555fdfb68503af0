//! Fuzzing the table loader (issue 14, item 10): mutated and random table
//! texts go through the one reader every path uses (`validate::load_str`,
//! the same call `validate`, `show`, `explain` and the MPI selector's rank
//! 0 make; the other ranks receive the validated text and parse it with
//! the same function), and through the file reader (`read_text`, the size
//! cap). Properties, for every input:
//! - no panic and no hang (each load is timed; a generous bound catches a
//!   runaway, not a slow machine);
//! - an accepted table round-trips: written back with `to_yaml` and read
//!   again, it is accepted and writes the same text;
//! - the two ways a decision is made agree: `Table::lookup` (what `explain`
//!   and `show` use) and the precomputed `Decisions::choose` (what every
//!   call consults), for every communicator entry and sizes around every
//!   rule boundary;
//! - the compact (JSON) form rank 0 sends the other ranks is the same
//!   table;
//! - a duplicated mapping key anywhere is refused (the YAML parser's rule,
//!   which the removed hand-written reader did not follow).
//!
//! `PROPTEST_CASES=n` sets the number of inputs per property (default 256
//! here: about a second each in release). The 10-minute run:
//! `PROPTEST_CASES=200000 cargo test --release -p colltune-core --test
//! table_fuzz` (see the closing note for the figures).

use std::sync::Arc;
use std::time::{Duration, Instant};

use colltune_core::algorithms::Collective;
use colltune_core::tables::decide::{RuntimeSettings, Selector, Source};
use colltune_core::tables::table::validate::{self, MAX_TABLE_BYTES};
use proptest::prelude::*;

/// Valid tables of several shapes: the shipped one, tuned and built ones.
const SEEDS: &[&str] = &[
    include_str!("../../tuning-tables/vm-2core.yaml"),
    include_str!("../../tests/golden/tune.yaml"),
    include_str!("../../tests/golden/tune2.yaml"),
    include_str!("../../tests/golden/built.yaml"),
];

/// Tokens a mutation inserts: YAML syntax, table keys, numbers at the
/// edges of their types, algorithm names and junk.
const TOKENS: &[&str] = &[
    ":",
    "- ",
    "  ",
    "\t",
    "#",
    "---\n",
    "...\n",
    "[",
    "]",
    "{",
    "}",
    "&a ",
    "*a",
    "!!str ",
    "|",
    ">",
    "'",
    "\"",
    "%YAML 1.2\n",
    "<<: *a\n",
    "? ",
    "\n",
    "\u{feff}",
    "\u{0}",
    "é",
    "schema: 1\n",
    "schema: 2\n",
    "bcast:\n",
    "swap:\n",
    "ranks: ",
    "ppn: ",
    "nodes: ",
    "rules:\n",
    "min_bytes: ",
    "max_bytes: ",
    "algorithm: ",
    "execution: ",
    "params:\n",
    "segment: ",
    "radix: ",
    "provenance:\n",
    "margin: ",
    "0",
    "1",
    "-1",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "18446744073709551616",
    "1e400",
    ".nan",
    "~",
    "null",
    "true",
    "linear",
    "binomial",
    "knomial",
    "pipeline",
    "scatter_allgather",
    "hierarchical",
    "nonblocking",
    "blocking",
    "mpi",
    "no_such_algorithm",
];

#[derive(Clone, Debug)]
enum Mutation {
    DeleteLine(usize),
    DuplicateLine(usize),
    SwapLines(usize, usize),
    /// Replace the n-th number in the text.
    Number(usize, String),
    InsertToken(usize, usize),
    InsertText(usize, String),
    Indent(usize, i8),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let number = prop_oneof![
        (0u64..70_000_000).prop_map(|n| n.to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        Just("18446744073709551616".to_string()),
        Just("0x10".to_string()),
        Just("1.5".to_string()),
    ];
    prop_oneof![
        any::<usize>().prop_map(Mutation::DeleteLine),
        any::<usize>().prop_map(Mutation::DuplicateLine),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
        (any::<usize>(), number).prop_map(|(a, n)| Mutation::Number(a, n)),
        (any::<usize>(), 0..TOKENS.len()).prop_map(|(a, t)| Mutation::InsertToken(a, t)),
        (any::<usize>(), "[ -~\n\t]{0,24}").prop_map(|(a, s)| Mutation::InsertText(a, s)),
        (any::<usize>(), -4i8..5).prop_map(|(a, d)| Mutation::Indent(a, d)),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

/// The largest char boundary at or below `i`.
fn boundary(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn apply(text: &str, m: &Mutation) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let n = lines.len().max(1);
    match m {
        Mutation::DeleteLine(i) => {
            if !lines.is_empty() {
                lines.remove(i % n);
            }
        }
        Mutation::DuplicateLine(i) => {
            if !lines.is_empty() {
                let l = lines[i % n].clone();
                lines.insert(i % n, l);
            }
        }
        Mutation::SwapLines(a, b) => {
            if !lines.is_empty() {
                lines.swap(a % n, b % n);
            }
        }
        Mutation::Number(k, v) => {
            // The k-th run of digits, replaced.
            let runs: Vec<(usize, usize)> = {
                let b = text.as_bytes();
                let mut v = Vec::new();
                let mut i = 0;
                while i < b.len() {
                    if b[i].is_ascii_digit() {
                        let s = i;
                        while i < b.len() && b[i].is_ascii_digit() {
                            i += 1;
                        }
                        v.push((s, i));
                    } else {
                        i += 1;
                    }
                }
                v
            };
            if runs.is_empty() {
                return text.to_string();
            }
            let (s, e) = runs[k % runs.len()];
            return format!("{}{v}{}", &text[..s], &text[e..]);
        }
        Mutation::InsertToken(at, t) => {
            let at = boundary(text, at % (text.len() + 1));
            return format!("{}{}{}", &text[..at], TOKENS[*t], &text[at..]);
        }
        Mutation::InsertText(at, s) => {
            let at = boundary(text, at % (text.len() + 1));
            return format!("{}{s}{}", &text[..at], &text[at..]);
        }
        Mutation::Indent(i, d) => {
            if !lines.is_empty() {
                let l = &mut lines[i % n];
                if *d >= 0 {
                    *l = format!("{}{l}", " ".repeat(*d as usize));
                } else {
                    let strip = l
                        .chars()
                        .take((-*d) as usize)
                        .take_while(|c| *c == ' ')
                        .count();
                    *l = l[strip..].to_string();
                }
            }
        }
        Mutation::Truncate(at) => {
            let at = boundary(text, at % (text.len() + 1));
            return text[..at].to_string();
        }
    }
    let mut s = lines.join("\n");
    s.push('\n');
    s
}

/// Loads `text` and checks every property; `Err` says which failed.
fn check(text: &str) -> Result<bool, String> {
    let t0 = Instant::now();
    let loaded = validate::load_str(text);
    if t0.elapsed() > Duration::from_secs(5) {
        return Err(format!("load took {:?}", t0.elapsed()));
    }
    let table = match loaded {
        Err(problems) => {
            if problems.is_empty() {
                return Err("refused without a problem".into());
            }
            for p in &problems {
                if p.what.is_empty() || p.fix.is_empty() {
                    return Err(format!("a problem without what or fix: {p:?}"));
                }
            }
            return Ok(false);
        }
        Ok(t) => t,
    };
    if let Some(k) = duplicated_key(text) {
        return Err(format!("accepted a duplicated key `{k}`"));
    }
    // Round trip.
    let yaml = table.to_yaml().map_err(|e| format!("to_yaml: {e}"))?;
    let again =
        validate::load_str(&yaml).map_err(|p| format!("its own YAML is refused: {p:?}\n{yaml}"))?;
    let yaml2 = again.to_yaml().map_err(|e| format!("to_yaml: {e}"))?;
    if yaml != yaml2 {
        return Err(format!(
            "round trip changed the table:\n{yaml}\n---\n{yaml2}"
        ));
    }
    // The compact form other ranks receive is the same table.
    let wired = colltune_core::tables::table::Table::from_wire(&table.to_wire())
        .map_err(|e| format!("wire form refused: {e}"))?;
    if wired.to_yaml().map_err(|e| e.to_string())? != yaml {
        return Err("the wire form changed the table".into());
    }
    // The per-call decisions agree with the lookup.
    let sel = Selector {
        settings: RuntimeSettings::default(),
        table: Some(Arc::new(table)),
        fallback: None,
    };
    let table = sel.table.as_ref().unwrap();
    for c in [Collective::Bcast, Collective::Swap] {
        for cr in table.rules(c) {
            let d = sel.decisions(c, cr.key());
            let mut sizes = vec![0u64, 1, u64::MAX];
            for r in &cr.rules {
                sizes.extend([r.min_bytes.saturating_sub(1), r.min_bytes]);
                if let Some(m) = r.max_bytes {
                    sizes.extend([m, m.saturating_add(1)]);
                }
            }
            for b in sizes {
                let by_lookup = table.lookup(c, cr.key(), b);
                let (choice, id) = d.choose(b);
                // Any hint gives the same decision.
                for hint in (0..d.rules().len() + 2).chain([usize::MAX - 1, usize::MAX]) {
                    let (c2, id2) = d.choose_hinted(b, hint);
                    if id2 != id || !std::ptr::eq(c2, choice) {
                        return Err(format!(
                            "{c} {} at {b} bytes: choose says rule {id}, choose_hinted with hint {hint} says {id2}",
                            cr.key()
                        ));
                    }
                }
                let by_decision = match &choice.source {
                    Source::Table { index, .. } => Some(&cr.rules[*index]),
                    _ => None,
                };
                if by_lookup.map(|r| r as *const _) != by_decision.map(|r| r as *const _) {
                    return Err(format!(
                        "{c} {} at {b} bytes: lookup says {:?}, decisions say {:?}",
                        cr.key(),
                        by_lookup.map(|r| r.range()),
                        by_decision.map(|r| r.range())
                    ));
                }
            }
        }
    }
    Ok(true)
}

/// A mapping key that appears twice in one block mapping of block-style
/// YAML (same indentation, same parent, no list item between): the
/// independent oracle for "duplicated keys are refused". Conservative: it
/// may miss a duplicate in text it does not understand, never invents one.
fn duplicated_key(text: &str) -> Option<String> {
    // (indent, keys seen) for the open mappings.
    let mut stack: Vec<(usize, Vec<String>)> = Vec::new();
    for line in text.lines() {
        let t = line.trim_start_matches(' ');
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let mut indent = line.len() - t.len();
        let mut t = t;
        let mut item = false;
        while let Some(rest) = t.strip_prefix("- ") {
            indent += 2;
            t = rest;
            item = true;
        }
        // Only plain `key: value` lines are understood; after anything else
        // (flow style, anchors, tags, continued scalars) the structure is
        // unknown and nothing before it is compared (no false alarms).
        let simple = t
            .split_once(':')
            .map(|(k, _)| k.trim_end())
            .filter(|k| !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
        let Some(k) = simple else {
            stack.clear();
            continue;
        };
        while stack.last().is_some_and(|(i, _)| *i > indent) {
            stack.pop();
        }
        if item {
            // A new list item starts a new mapping at this indentation.
            while stack.last().is_some_and(|(i, _)| *i >= indent) {
                stack.pop();
            }
        }
        match stack.last_mut() {
            Some((i, keys)) if *i == indent => {
                if keys.iter().any(|x| x == k) {
                    return Some(k.to_string());
                }
                keys.push(k.to_string());
            }
            _ => stack.push((indent, vec![k.to_string()])),
        }
    }
    None
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn mutated_tables_load_or_are_refused_cleanly(
        seed in 0..SEEDS.len(),
        ms in prop::collection::vec(mutation(), 1..6),
    ) {
        let mut text = SEEDS[seed].to_string();
        for m in &ms {
            text = apply(&text, m);
        }
        if let Err(e) = check(&text) {
            prop_assert!(false, "{e}\nmutations: {ms:?}\ntext:\n{text}");
        }
    }

    #[test]
    fn arbitrary_text_is_refused_cleanly(text in "[ -~\n\t]{0,400}") {
        if let Err(e) = check(&text) {
            prop_assert!(false, "{e}\ntext:\n{text}");
        }
    }

    #[test]
    fn duplicated_sections_and_documents_are_refused(
        seed in 0..SEEDS.len(),
        how in 0..3u8,
    ) {
        let base = SEEDS[seed];
        let text = match how {
            // a second bcast: section
            0 => format!("{base}bcast:\n- ranks: 2\n  ppn: 2\n  nodes: 1\n  rules:\n  - min_bytes: 0\n    algorithm: linear\n"),
            // two documents
            1 => format!("{base}---\n{base}"),
            // a key duplicated inside the first rule
            _ => {
                let i = base.find("algorithm:").expect("seed tables have rules");
                let end = i + base[i..].find('\n').unwrap() + 1;
                let line = &base[base[..i].rfind('\n').unwrap() + 1..end];
                format!("{}{line}{}", &base[..end], &base[end..])
            }
        };
        prop_assert!(validate::load_str(&text).is_err(), "accepted:\n{text}");
    }
}

/// The file reader: regular files only, capped; what it returns is what
/// the loader gets.
#[test]
fn the_file_reader_caps_and_refuses_non_files() {
    let dir = std::env::temp_dir().join(format!("colltune-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ok = dir.join("ok.yaml");
    std::fs::write(&ok, SEEDS[0]).unwrap();
    assert_eq!(validate::read_text(&ok).unwrap(), SEEDS[0]);
    let big = dir.join("big.yaml");
    std::fs::write(&big, vec![b'#'; MAX_TABLE_BYTES as usize + 1]).unwrap();
    let e = validate::read_text(&big).unwrap_err().to_string();
    assert!(e.contains("big.yaml"), "{e}");
    let e = validate::read_text(&dir).unwrap_err().to_string();
    assert!(e.contains(&*dir.to_string_lossy()), "{e}");
    let e = validate::read_text(std::path::Path::new("/dev/zero"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("/dev/zero"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Found by this fuzzer: a parameter given twice inside `params` was
/// accepted (the last one silently won); now refused with its line.
#[test]
fn a_duplicated_parameter_is_refused_with_its_line() {
    let base = SEEDS[3];
    let i = base
        .find("      pairing:")
        .expect("built.yaml has a pairing");
    let end = i + base[i..].find('\n').unwrap() + 1;
    let text = format!("{}{}{}", &base[..end], &base[i..end], &base[end..]);
    // The map's first key or the duplicate: either points the reader there.
    let lines = [base[..end].lines().count(), base[..end].lines().count() + 1];
    let problems = validate::load_str(&text).unwrap_err();
    assert!(
        problems
            .iter()
            .any(|p| p.what.contains("duplicate parameter `pairing`")
                && p.line.is_some_and(|l| lines.contains(&l))),
        "{problems:?} (want line {lines:?})"
    );
}
