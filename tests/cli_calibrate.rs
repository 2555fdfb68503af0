//! `calibrate --collectives`, `plan` and `predict`'s uncertain points from
//! the command line (no MPI): a model fitted to a small broadcast CSV is
//! read back by `predict --model`, `plan` prints points and the command
//! lines that measure them, and bad input is an error naming the file and
//! what to do, never a panic.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn ct(args: &[&str]) -> Output {
    run({
        let mut c = Command::new(colltune());
        c.args(args);
        c
    })
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A plain broadcast CSV: basic linear (1) grows with the ranks, binomial
/// (6) with their logarithm; both with the size.
fn bcast_csv(d: &Path) -> PathBuf {
    let mut t = String::from("algorithm,ranks,bytes,time_us\n");
    for r in [2u32, 4, 8] {
        for b in [8u64, 1024, 65536] {
            let lg = f64::from(r).log2();
            let per = b as f64 * 2e-4;
            t += &format!(
                "1,{r},{b},{:.3}\n",
                0.5 + 0.4 * f64::from(r - 1) + per * f64::from(r - 1)
            );
            t += &format!("6,{r},{b},{:.3}\n", 0.8 + 0.6 * lg + per * lg);
        }
    }
    let p = d.join("bcast.csv");
    std::fs::write(&p, t).unwrap();
    p
}

/// `calibrate --collectives CSV -o MODEL`, or `predict --model MODEL
/// --measured CSV`, on the layout these tests use.
fn fit_and(csv: &Path, model: &Path, what: &str) -> Output {
    let files: [&str; 4] = match what {
        "calibrate" => ["--collectives", s(csv), "-o", s(model)],
        _ => ["--model", s(model), "--measured", s(csv)],
    };
    let mut args = vec![what];
    args.extend(files);
    args.extend(["--layout", "node:2,core:4", "--mapping", "core"]);
    ct(&args)
}

/// `--cross-validate`: the held-out check's line, with its folds and
/// what it kept.
#[test]
fn calibrate_cross_validate_says_what_the_held_out_points_kept() {
    let d = scratch("calib-cli-cv");
    let csv = bcast_csv(&d);
    let model = d.join("m.yaml");
    let args = [
        "calibrate",
        "--collectives",
        s(&csv),
        "-o",
        s(&model),
        "--layout",
        "node:2,core:4",
        "--mapping",
        "core",
        "--cross-validate",
    ];
    let (o, line) = (
        ct(&args),
        "cross-validation: 5 folds; held-out error (mean |ln|) at the start",
    );
    let out = text(&o);
    assert!(o.status.success() && out.contains(line), "{out}");
    assert!(out.contains("of the fitted log-factors"), "{out}");
    // Without it, no such line.
    let out = text(&fit_and(&csv, &model, "calibrate"));
    assert!(!out.contains("cross-validation"), "{out}");
}

#[test]
fn calibrate_writes_a_model_predict_reads_and_plan_plans() {
    let d = scratch("calib-cli");
    let csv = bcast_csv(&d);
    let model = d.join("m.yaml");
    let o = fit_and(&csv, &model, "calibrate");
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("collectives: 18 points (algorithms 1-6; 2-8 ranks; 8-65536 B"),
        "{out}"
    );
    assert!(out.contains("start: colltune's generic figures"), "{out}");
    assert!(
        out.contains("not pinned, left at the start's figure"),
        "{out}"
    );
    assert!(out.contains("residuals: error median"), "{out}");
    let y = std::fs::read_to_string(&model).unwrap();
    assert!(
        y.contains("fit_error:") && y.contains("calibrate --collectives"),
        "{y}"
    );
    let o = fit_and(&csv, &model, "predict");
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    let stdout = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[lines.len() - 2].starts_with("uncertain: "), "{out}");
    assert!(lines[lines.len() - 1].starts_with("agreement "), "{out}");
    // plan on a grid: points and the commands that measure them.
    let o = ct(&[
        "plan",
        "--budget",
        "4",
        "--layout",
        "node:2,core:4",
        "--mapping",
        "core",
        "--model",
        s(&model),
        "--algorithms",
        "1,6",
        "--sizes",
        "1..64K",
    ]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("# 4 of "), "{out}");
    assert!(
        out.contains("osu_bcast -m")
            && out.contains("IMB-MPI1 Bcast")
            && out.contains("colltune bench"),
        "{out}"
    );
    // plan on a measured set: the chosen points and the rest, apart.
    let (fit, rest) = (d.join("fit.csv"), d.join("rest.csv"));
    let o = ct(&[
        "plan",
        "--budget",
        "5",
        "--from",
        s(&csv),
        "--layout",
        "node:2,core:4",
        "--mapping",
        "core",
        "-o",
        s(&fit),
        "--rest",
        s(&rest),
    ]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("wrote 5 samples of the chosen points")
            && out.contains("wrote 13 samples of the other points"),
        "{out}"
    );
}

#[test]
fn bad_input_is_an_error_naming_what_to_do() {
    let d = scratch("calib-bad");
    let csv = bcast_csv(&d);
    let model = d.join("m.yaml");
    let empty = d.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let garbled = d.join("g.csv");
    std::fs::write(&garbled, "algorithm,ranks,bytes,time_us\n6,4,8,fast\n").unwrap();
    for (args, says) in [
        (
            vec![
                "calibrate",
                "--collectives",
                s(&csv),
                "--mapping",
                "core",
                "-o",
                s(&model),
            ],
            "needs --layout",
        ),
        (
            vec![
                "calibrate",
                "--collectives",
                s(&csv),
                "--layout",
                "node:2,core:4",
                "-o",
                s(&model),
            ],
            "needs --mapping",
        ),
        (
            vec![
                "calibrate",
                "--collectives",
                s(&csv),
                "--layout",
                "node:1,core:2",
                "--mapping",
                "core",
                "-o",
                s(&model),
            ],
            "give a --layout",
        ),
        (
            vec![
                "calibrate",
                "--collectives",
                s(&empty),
                "--layout",
                "node:2,core:4",
                "--mapping",
                "core",
                "-o",
                s(&model),
            ],
            "no files in it",
        ),
        (
            vec![
                "calibrate",
                "--collectives",
                s(&garbled),
                "--layout",
                "node:2,core:4",
                "--mapping",
                "core",
                "-o",
                s(&model),
            ],
            "line 2: time_us `fast` is not a number",
        ),
        (
            vec![
                "plan",
                "--budget",
                "0",
                "--layout",
                "node:2,core:4",
                "--mapping",
                "core",
            ],
            "--budget must be at least 1",
        ),
        (
            vec![
                "plan",
                "--budget",
                "3",
                "--layout",
                "node:2,core:4",
                "--mapping",
                "core",
                "-o",
                s(&model),
            ],
            "give --from SET",
        ),
        (
            vec![
                "predict",
                "--model",
                "tuning-tables/models/leonardo-dragonfly.yaml",
                "--layout",
                "node:4,core:4",
                "--mapping",
                "node",
                "--group-by",
                "nodes:2",
            ],
            "--group-by needs --alloc",
        ),
    ] {
        let o = ct(&args);
        let out = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {out}");
        assert!(out.contains(says), "{args:?}: {out}");
        assert!(!out.contains("panicked"), "{args:?}: {out}");
    }
}

/// colltune's own `bine` measured beside Open MPI's (as pico's `*_over`
/// files are read): fitted, predicted and named by both commands.
#[test]
fn colltunes_own_bine_enters_the_fit_and_the_check() {
    let d = scratch("calib-bine");
    let csv = bcast_csv(&d);
    let mut t = std::fs::read_to_string(&csv).unwrap();
    for r in [2u32, 4, 8] {
        for b in [8u64, 1024, 65536] {
            let lg = f64::from(r).log2();
            t += &format!(
                "bine,{r},{b},{:.3}\n",
                0.9 + 0.5 * lg + b as f64 * 2e-4 * lg
            );
        }
    }
    std::fs::write(&csv, t).unwrap();
    let model = d.join("m.yaml");
    let o = fit_and(&csv, &model, "calibrate");
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("27 points (algorithms 1-6, bine;"), "{out}");
    assert!(out.contains(", bine: "), "{out}");
    let o = fit_and(&csv, &model, "predict");
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("bine: ") && out.contains("agreement "),
        "{out}"
    );
}

/// `--alloc` and `--group-by`: the fit runs on the allocation's nodes and
/// groups (8 nodes named by a Slurm list, 4 to a group), says the group
/// level's knob, and writes the groups it simulated; `--group-by` alone
/// is an error naming what it needs.
#[test]
fn calibrate_takes_an_allocation_and_its_groups() {
    let d = scratch("calib-alloc");
    let csv = bcast_csv(&d);
    let model = d.join("m.yaml");
    let base = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tuning-tables/models/leonardo-dragonfly.yaml"
    );
    let mut args = vec!["calibrate", "--collectives", s(&csv), "--base", base];
    args.extend([
        "--layout",
        "node:1,core:4",
        "--mapping",
        "node",
        "-o",
        s(&model),
    ]);
    args.extend(["--alloc", "n[1-8]", "--group-by", "nodes:4"]);
    let o = ct(&args);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    let top = out
        .lines()
        .find(|l| l.contains("top-bandwidth"))
        .unwrap_or_default();
    assert!(!top.contains("no group level"), "{out}");
    let m = std::fs::read_to_string(&model).unwrap();
    assert!(m.contains("group:\n  nodes: 4\n"), "{m}");
    // Without the allocation the grouping rule has nothing to group.
    let mut alone = args[..args.len() - 4].to_vec();
    alone.extend(["--group-by", "nodes:4"]);
    let o = ct(&alone);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("--group-by needs --alloc"),
        "{}",
        text(&o)
    );
}
