//! Outputs pinned byte for byte: the MPI-free commands on fixed inputs (a
//! simulated measurement, a tune over a network model, the shipped tables)
//! against the outputs stored in `tests/golden/`. A refactoring must leave
//! them unchanged; a deliberate change of output re-records them with
//! `COLLTUNE_BLESS=1 cargo test --release --test golden` and shows in the
//! diff of the commit. Wall-clock figures, dates and scratch paths are
//! masked; raw CSVs are pinned by row count and digest (a mismatch leaves
//! the new CSV beside the scratch directory to diff).

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const MODEL: &str = "tuning-tables/models/test-ib.yaml";

fn golden(name: &str) -> PathBuf {
    Path::new(ROOT).join("tests/golden").join(name)
}

/// The binary under test: this build's, or `COLLTUNE_GOLDEN_BIN` (to check
/// that another build, an older commit's say, prints the same).
fn bin() -> String {
    std::env::var("COLLTUNE_GOLDEN_BIN").unwrap_or_else(|_| colltune().into())
}

/// Masks what changes from run to run: dates, durations, the scratch dir,
/// the binary's and the checkout's paths.
fn mask(text: &str, dir: &Path) -> String {
    let dir = dir.display().to_string();
    text.lines()
        .map(|l| {
            let l = l
                .replace(&dir, "OUT")
                .replace(&bin(), "colltune")
                .replace(ROOT, "ROOT");
            let mut out = String::with_capacity(l.len());
            let words: Vec<&str> = l.split(' ').collect();
            for (i, w) in words.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                let next = words.get(i + 1).copied().unwrap_or("");
                let prev = if i > 0 { words[i - 1] } else { "" };
                let is_date = w.len() >= 20
                    && w.as_bytes().get(4) == Some(&b'-')
                    && w.contains('T')
                    && w.trim_end_matches([',', ')']).ends_with('Z');
                let number =
                    |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit() || c == '.');
                if is_date {
                    out.push_str("DATE");
                    out.push_str(&w[w.trim_end_matches([',', ')']).len()..]);
                } else if number(w)
                    && (prev == "seconds:"
                        || (prev == "in" && (next == "s" || next.starts_with("s "))))
                {
                    out.push('X');
                } else if prev == "in"
                    && w.ends_with('s')
                    && next.starts_with('(')
                    && w[..w.len() - 1]
                        .chars()
                        .all(|c| c.is_ascii_digit() || c == 'h' || c == 'm')
                {
                    out.push_str("Xs");
                } else {
                    out.push_str(w);
                }
            }
            out
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// FNV-1a, 64 bits: a digest for pinning large CSVs without storing them.
fn digest(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{} rows, fnv1a64 {h:016x}", text.lines().count())
}

/// Compares `actual` with the stored `name`, or stores it when blessing.
fn expect(name: &str, actual: &str, failures: &mut Vec<String>) {
    let path = golden(name);
    if std::env::var_os("COLLTUNE_BLESS").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; record it with COLLTUNE_BLESS=1 cargo test --release --test golden",
            path.display()
        )
    });
    if want != actual {
        let new = std::env::temp_dir().join(format!("colltune-golden-{name}"));
        std::fs::write(&new, actual).unwrap();
        failures.push(format!(
            "{name} changed: diff {} {}",
            path.display(),
            new.display()
        ));
    }
}

struct Run<'a> {
    dir: &'a Path,
    failures: Vec<String>,
}

impl Run<'_> {
    /// Runs colltune with `args` (`{}` is the scratch directory); pins its
    /// standard output (and standard error when `stderr`) as `name`.
    fn cmd(&mut self, name: &str, args: &[&str], stderr: bool) {
        let dir = self.dir.display().to_string();
        let args: Vec<String> = args.iter().map(|a| a.replace("{}", &dir)).collect();
        let o = Command::new(bin())
            .current_dir(ROOT)
            .args(&args)
            .output()
            .unwrap();
        let mut text = format!("$ colltune {}\n", args.join(" "));
        text += &String::from_utf8_lossy(&o.stdout);
        if stderr {
            text += "--- stderr ---\n";
            text += &String::from_utf8_lossy(&o.stderr);
        }
        text += &format!("--- exit {}\n", o.status.code().unwrap_or(-1));
        let text = mask(&text, self.dir);
        expect(&format!("{name}.txt"), &text, &mut self.failures);
    }

    /// Pins a file the commands wrote: whole, or by digest when `big`.
    fn file(&mut self, name: &str, big: bool) {
        let text = std::fs::read_to_string(self.dir.join(name)).unwrap_or_default();
        let text = mask(&text, self.dir);
        if big {
            expect(
                &format!("{name}.digest"),
                &(digest(&text) + "\n"),
                &mut self.failures,
            );
            if std::env::var_os("COLLTUNE_BLESS").is_none() {
                let keep = std::env::temp_dir().join(format!("colltune-golden-{name}"));
                let _ = std::fs::write(keep, &text);
            }
        } else {
            expect(name, &text, &mut self.failures);
        }
    }
}

#[test]
fn the_mpi_free_commands_print_what_they_printed() {
    let dir = scratch("golden");
    let mut r = Run {
        dir: &dir,
        failures: Vec::new(),
    };
    let sizes = "1,64,4K,64K,1M";
    r.cmd(
        "simulate",
        &[
            "simulate",
            "--model",
            MODEL,
            "--ranks",
            "6",
            "--ppn",
            "3",
            "--sizes",
            sizes,
            "--csv",
            "{}/sim.csv",
        ],
        true,
    );
    r.file("sim.csv", true);
    r.cmd(
        "tune-model",
        &[
            "tune",
            "--model",
            MODEL,
            "--ranks",
            "12",
            "--ppn",
            "4",
            "--sizes",
            "1..1M",
            "--table",
            "{}/tune.yaml",
            "--csv",
            "{}/tune.csv",
        ],
        false,
    );
    r.file("tune.yaml", false);
    r.file("tune.csv", true);
    r.cmd(
        "tune-model-exhaustive",
        &[
            "tune",
            "--model",
            MODEL,
            "--layout",
            "3+2+2",
            "--exhaustive",
            "--collective",
            "bcast",
            "--sizes",
            "1..64K",
            "--table",
            "{}/tune2.yaml",
            "--csv",
            "{}/tune2.csv",
        ],
        false,
    );
    r.file("tune2.yaml", false);
    r.file("tune2.csv", true);
    r.cmd(
        "table-build",
        &["table", "build", "{}/sim.csv", "-o", "{}/built.yaml"],
        true,
    );
    r.file("built.yaml", false);
    // the model's fit error as the predictions' interval, and explain
    // saying the rule is a prediction (docs/model-tables.md)
    r.cmd(
        "table-build-fit",
        &[
            "table",
            "build",
            "{}/sim.csv",
            "--fit-error",
            "0.2",
            "-o",
            "{}/fit.yaml",
        ],
        true,
    );
    r.cmd(
        "explain-predicted",
        &[
            "explain",
            "{}/fit.yaml",
            "--ranks",
            "6",
            "--ppn",
            "3",
            "--bytes",
            "64K",
        ],
        true,
    );
    r.cmd(
        "show-shipped",
        &["show", "tuning-tables/vm-2core.yaml"],
        true,
    );
    r.cmd("show-tuned", &["show", "{}/tune.yaml"], true);
    r.cmd(
        "diff-models",
        &[
            "diff",
            "tuning-tables/models/table-ib-edr-skylake-64x32.yaml",
            "tuning-tables/models/table-roce-25gbe-broadwell-64x32.yaml",
        ],
        true,
    );
    r.cmd(
        "diff-tunes",
        &["diff", "{}/tune.yaml", "{}/built.yaml"],
        true,
    );
    r.cmd(
        "explain",
        &[
            "explain",
            "tuning-tables/vm-2core.yaml",
            "--ranks",
            "4",
            "--bytes",
            "65536",
        ],
        true,
    );
    for f in ["openmpi", "openmpi-json", "mpich"] {
        r.cmd(
            &format!("export-{f}"),
            &["export", "tuning-tables/vm-2core.yaml", "--format", f],
            true,
        );
    }
    r.cmd("report", &["report", "{}/sim.csv"], true);
    r.cmd("fit", &["fit", "{}/sim.csv"], true);
    r.cmd(
        "compare",
        &["simulate", "--model", MODEL, "--compare", "{}/sim.csv"],
        true,
    );
    r.cmd("list", &["list"], true);
    let mut tables: Vec<String> = std::fs::read_dir(Path::new(ROOT).join("tuning-tables/models"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("table-"))
        })
        .map(|p| p.strip_prefix(ROOT).unwrap().display().to_string())
        .collect();
    tables.sort();
    tables.insert(0, "tuning-tables/vm-2core.yaml".into());
    let mut args = vec!["validate"];
    args.extend(tables.iter().map(String::as_str));
    r.cmd("validate", &args, true);
    assert!(r.failures.is_empty(), "{}", r.failures.join("\n"));
}
