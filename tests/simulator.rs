//! The simulator end to end: `simulate` writes bench's CSV that the
//! inspection commands read, `simulate --compare` scores a model against
//! measurements, `tune --model` writes a valid table marked simulated, bad
//! model files are reported with file and place, and `calibrate` measures
//! and fits a model under mpirun.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use colltune_core::measure::record;
use colltune_core::model::compare::{compare, Comparison, Options, Tally};
use colltune_core::model::sim::Model;
use common::{colltune, mpirun, run, scratch, text};

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

/// Every row of a CSV, by column name.
fn records(p: &Path) -> Vec<HashMap<String, String>> {
    let mut rdr = csv::Reader::from_path(p).unwrap();
    let header: Vec<String> = rdr.headers().unwrap().iter().map(String::from).collect();
    rdr.records()
        .map(|r| {
            header
                .iter()
                .cloned()
                .zip(r.unwrap().iter().map(String::from))
                .collect()
        })
        .collect()
}

fn model_file(dir: &Path, name: &str, inter_gbs: f64, inter_lat: f64) -> PathBuf {
    let p = dir.join(format!("{name}.yaml"));
    std::fs::write(
        &p,
        format!(
            "name: {name}\nsource: test figures\n\
             intra: {{latency_us: 0.3, overhead_us: 0.1, gap_us: 0.05, bandwidth_gbs: 10, eager_limit: 4096}}\n\
             inter: {{latency_us: {inter_lat}, overhead_us: 0.3, gap_us: 0.1, bandwidth_gbs: {inter_gbs}, eager_limit: 65536}}\n\
             copy_gbs: 10\n"
        ),
    )
    .unwrap();
    p
}

#[test]
fn simulate_writes_bench_csv_that_every_tool_reads() {
    let d = scratch("sim-csv");
    let m = model_file(&d, "fast", 12.5, 1.5);
    let csv = d.join("sim.csv");
    let o = ct(&[
        "simulate",
        "--model",
        s(&m),
        "--ranks",
        "12",
        "--ppn",
        "4",
        "--collective",
        "bcast",
        "--sizes",
        "1,4K,1M",
        "--csv",
        s(&csv),
        "--summary-only",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let body = std::fs::read_to_string(&csv).unwrap();
    let rows = records(&csv);
    // Every broadcast algorithm (node-aware ones too: 3 nodes) x 2
    // executions x 3 sizes x the rotating root's 4 places in a node (0..3:
    // moving it by a whole node changes nothing), each a positive time.
    assert!(rows.len() >= 10 * 2 * 3 * 4, "{} rows\n{body}", rows.len());
    assert!(body.contains(",hierarchical,"), "{body}");
    assert!(
        rows.iter().all(|r| r["source"] == "simulated:fast"),
        "{body}"
    );
    let roots: std::collections::BTreeSet<&str> = rows.iter().map(|r| r["root"].as_str()).collect();
    assert_eq!(roots.into_iter().collect::<Vec<_>>(), ["0", "1", "2", "3"]);
    // Within every series and root, a 1 MiB broadcast costs more than a
    // 1-byte one.
    type Series = (String, String, String);
    let mut by: HashMap<Series, Vec<(u64, f64)>> = Default::default();
    for r in &rows {
        by.entry((r["spec"].clone(), r["execution"].clone(), r["root"].clone()))
            .or_default()
            .push((r["bytes"].parse().unwrap(), r["time_us"].parse().unwrap()));
    }
    for (k, mut v) in by {
        v.sort_by_key(|p| p.0);
        assert!(
            v.len() == 3 && v[0].1 > 0.0 && v[2].1 > v[0].1,
            "{k:?}: {v:?}"
        );
    }
    let o = ct(&["report", s(&csv)]);
    assert!(o.status.success(), "{}", text(&o));
    let table = d.join("t.yaml");
    let o = ct(&["table", "build", s(&csv), "--output", s(&table)]);
    assert!(o.status.success(), "{}", text(&o));
    let o = ct(&["validate", s(&table)]);
    assert!(o.status.success(), "{}", text(&o));
    // Simulation is deterministic: the same command gives the same file.
    let csv2 = d.join("sim2.csv");
    let o = ct(&[
        "simulate",
        "--model",
        s(&m),
        "--layout",
        "4+4+4",
        "--collective",
        "bcast",
        "--sizes",
        "1,4K,1M",
        "--csv",
        s(&csv2),
        "--summary-only",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let times = |p: &Path| -> Vec<String> {
        records(p)
            .into_iter()
            .map(|r| r["time_us"].clone())
            .collect()
    };
    assert_eq!(times(&csv), times(&csv2));
}

/// `simulate --compare`'s summary lines carry the library's result.
fn assert_prints(out: &str, c: &Comparison) {
    let t = &c.totals;
    let line = |start: &str| {
        out.lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no line `{start}...`: {out}"))
    };
    let winners = line("model ");
    assert!(
        winners.contains(&format!(
            "predicted winner = measured winner at {} of {} sizes ({:.0}%)",
            t.exact.hits,
            t.sizes,
            t.exact.percent()
        )),
        "{winners}"
    );
    let times = line("predicted times: ");
    assert!(
        times.contains(&format!(
            "{} of {} points ({:.0}%) within 30%",
            t.within.hits,
            t.within.of,
            t.within.percent()
        )),
        "{times}"
    );
    let itself = line("the measurement against itself");
    let (near, within) = itself
        .split_once("; times")
        .unwrap_or_else(|| panic!("{itself}"));
    let i = &t.itself;
    assert!(
        near.ends_with(&format!(
            "best at {} of {} ({:.0}%)",
            i.near.hits,
            i.near.of,
            i.near.percent()
        )),
        "{itself}"
    );
    assert!(
        within.ends_with(&format!(
            "at {} of {} ({:.0}%)",
            i.within.hits,
            i.within.of,
            i.within.percent()
        )),
        "{itself}"
    );
}

#[test]
fn compare_scores_a_model_against_measurements() {
    let d = scratch("sim-compare");
    let fast = model_file(&d, "fast", 12.5, 1.5);
    // A very different machine: slow, high-latency network.
    let slow = model_file(&d, "slow", 0.01, 500.0);
    let csv = d.join("fast.csv");
    let o = ct(&[
        "simulate",
        "--model",
        s(&fast),
        "--layout",
        "3x2",
        "--collective",
        "bcast",
        "--sizes",
        "8,64K,1M",
        "--csv",
        s(&csv),
        "--summary-only",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    // The command's defaults.
    let opts = Options {
        tolerance: 0.3,
        near: 0.05,
    };
    let model = |p: &Path| Model::load(p).unwrap();
    // Scores the model in `m` against the samples in `p`, in the library
    // and with the command, which must print the library's figures.
    let scored = |m: &Path, p: &Path| {
        let c = compare(&model(m), &record::read(p).unwrap(), &opts).unwrap();
        let o = ct(&[
            "simulate",
            "--model",
            s(m),
            "--compare",
            s(p),
            "--summary-only",
        ]);
        let out = text(&o);
        assert!(o.status.success(), "{out}");
        assert_prints(&out, &c);
        c
    };
    // The same model predicts its own data exactly.
    let c = scored(&fast, &csv);
    assert_eq!(c.totals.exact, Tally { hits: 3, of: 3 });
    assert!(
        c.totals.within.of > 0 && c.totals.within.hits == c.totals.within.of,
        "{:?}",
        c.totals
    );
    // Another model does not.
    let c = scored(&slow, &csv);
    assert!(
        c.totals.within.of > 0 && c.totals.within.hits == 0,
        "{:?}",
        c.totals
    );
    // The measurement against itself: a second run, the same or twice as
    // slow throughout (same winners, no time within 30%).
    let rows = record::read(&csv).unwrap();
    for (factor, all_within) in [(1.0, true), (2.0, false)] {
        let mut two = rows.clone();
        two.extend(rows.iter().map(|r| record::Sample {
            run: 2,
            time_us: r.time_us * factor,
            ..r.clone()
        }));
        let p = d.join(format!("two-runs-{factor}.csv"));
        record::write_to(std::fs::File::create(&p).unwrap(), &two).unwrap();
        let i = scored(&fast, &p).totals.itself;
        // 3 sizes, each run against the other
        assert_eq!(i.near, Tally { hits: 6, of: 6 }, "x{factor}");
        assert!(i.within.of > 0, "x{factor}: {i:?}");
        let expected = if all_within { i.within.of } else { 0 };
        assert_eq!(i.within.hits, expected, "x{factor}: {i:?}");
    }
    // A CSV with nothing of ours to compare is a usage error.
    let empty = d.join("empty.csv");
    std::fs::write(
        &empty,
        std::fs::read_to_string(&csv)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let o = ct(&["simulate", "--model", s(&fast), "--compare", s(&empty)]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("empty.csv"), "{}", text(&o));
}

#[test]
fn tune_over_a_model_writes_a_simulated_table() {
    let d = scratch("sim-tune");
    let m = model_file(&d, "fast", 12.5, 1.5);
    let (csv, table) = (d.join("t.csv"), d.join("t.yaml"));
    let o = ct(&[
        "tune",
        "--model",
        s(&m),
        "--layout",
        "8x4",
        "--comm-sizes",
        "8",
        "--sizes",
        "1..1M",
        "--csv",
        s(&csv),
        "--table",
        s(&table),
    ]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    let y = std::fs::read_to_string(&table).unwrap();
    assert!(y.contains("simulated:fast"), "{y}");
    assert!(y.contains("model fast"), "{y}");
    let o = ct(&["validate", s(&table)]);
    assert!(o.status.success(), "{}", text(&o));
    // Both communicators (32 ranks on 8 nodes; 8 ranks on 2) and both
    // collectives have rules.
    let o = ct(&[
        "explain",
        s(&table),
        "--collective",
        "bcast",
        "--ranks",
        "32",
        "--ppn",
        "4",
        "--nodes",
        "8",
        "--bytes",
        "1M",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let o = ct(&[
        "explain",
        s(&table),
        "--collective",
        "swap",
        "--ranks",
        "8",
        "--ppn",
        "4",
        "--nodes",
        "2",
        "--bytes",
        "1",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    // Refuses to overwrite samples.
    let o = ct(&[
        "tune",
        "--model",
        s(&m),
        "--layout",
        "8x4",
        "--csv",
        s(&csv),
        "--table",
        s(&table),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

#[test]
fn bad_model_files_name_the_file_and_the_place() {
    let d = scratch("sim-bad");
    let good = std::fs::read_to_string(model_file(&d, "ok", 12.5, 1.5)).unwrap();
    let cases = [
        ("missing", good.replace("copy_gbs: 10\n", ""), "copy_gbs"),
        (
            "unknown",
            good.replace("copy_gbs: 10", "copy_gbs: 10\nbogus: 1"),
            "bogus",
        ),
        (
            "negative",
            good.replace("latency_us: 0.3", "latency_us: -1"),
            "intra.latency_us",
        ),
        (
            "zero-bw",
            good.replace("bandwidth_gbs: 12.5", "bandwidth_gbs: 0"),
            "inter.bandwidth_gbs",
        ),
        (
            "intra-bucket",
            good.replacen("latency_us: 0.3,", "latency_us: 0.3, burst_bytes: 2048,", 1),
            "intra.burst_bytes",
        ),
        ("not-yaml", "intra: [".to_string(), "bad"),
    ];
    for (name, body, what) in cases {
        let p = d.join(format!("{name}.yaml"));
        std::fs::write(&p, body).unwrap();
        let o = ct(&["simulate", "--model", s(&p), "--ranks", "4", "--sizes", "1"]);
        let out = text(&o);
        assert_eq!(o.status.code(), Some(2), "{name}: {out}");
        assert!(out.contains(&format!("{name}.yaml")), "{name}: {out}");
        if what != "bad" {
            assert!(out.contains(what), "{name}: {out}");
        }
        assert!(!out.contains("panicked"), "{name}: {out}");
    }
    let o = ct(&[
        "simulate",
        "--model",
        s(&d.join("absent.yaml")),
        "--ranks",
        "4",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("absent.yaml"), "{}", text(&o));
}

#[test]
fn shipped_models_load_and_their_tables_validate() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tuning-tables/models");
    let mut n = 0;
    for e in std::fs::read_dir(&root).unwrap() {
        let p = e.unwrap().path();
        let Some(name) = p.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if name.ends_with(".yaml") && !name.starts_with("table-") {
            let o = ct(&[
                "simulate",
                "--model",
                s(&p),
                "--layout",
                "2x2",
                "--collective",
                "bcast",
                "-a",
                "binomial",
                "--sizes",
                "8",
                "--summary-only",
            ]);
            assert!(o.status.success(), "{name}: {}", text(&o));
            n += 1;
        } else if name.starts_with("table-") {
            let o = ct(&["validate", s(&p)]);
            assert!(o.status.success(), "{name}: {}", text(&o));
        }
    }
    assert!(n >= 1);
}

/// Runs calibrate under mpirun with a node layout forced by COLLTUNE_NODES.
fn calibrate(ranks: usize, nodes: &str, out: &Path, extra: &[&str]) -> Output {
    let mut c = mpirun(ranks);
    c.args(["-x", &format!("COLLTUNE_NODES={nodes}")])
        .arg(colltune())
        .args([
            "calibrate",
            "--out",
            s(out),
            "--sizes",
            "1..64K",
            "--budget-ms",
            "20",
            "--runs",
            "3",
        ])
        .args(extra);
    run(c)
}

#[test]
fn calibrate_measures_and_fits_a_model_under_mpirun() {
    let d = scratch("sim-calibrate");
    let model = d.join("m.yaml");
    let csv = d.join("runs.csv");
    for (ranks, nodes) in [(3, "2+1"), (4, "2+2")] {
        let _ = std::fs::remove_file(&model);
        let o = calibrate(ranks, nodes, &model, &["--csv", s(&csv), "--name", "here"]);
        let out = text(&o);
        assert!(o.status.success(), "{ranks} ranks: {out}");
        assert!(
            out.contains("intra-node link") && out.contains("inter-node link"),
            "{out}"
        );
        // The model loads in the simulator and says where it came from.
        let y = std::fs::read_to_string(&model).unwrap();
        assert!(
            y.contains("name: here") && y.contains("calibrated by"),
            "{y}"
        );
        let o = ct(&[
            "simulate",
            "--model",
            s(&model),
            "--layout",
            "2x2",
            "--collective",
            "bcast",
            "-a",
            "linear",
            "--sizes",
            "1,64K",
            "--summary-only",
        ]);
        assert!(o.status.success(), "{}", text(&o));
        // Every size measured three times on both links, plus overheads.
        let raw = std::fs::read_to_string(&csv).unwrap();
        for link in ["intra", "inter"] {
            let n = raw
                .lines()
                .filter(|l| l.starts_with(&format!("{link},pingpong,")))
                .count();
            assert_eq!(n, 17 * 3, "{link}: {raw}");
            assert!(raw.contains(&format!("{link},recv-overhead,")), "{raw}");
        }
    }
    // Open MPI's protocol limits, given: not fitted, and a rendezvous
    // carries its first fragment (less ob1's headers).
    let o = calibrate(
        4,
        "2+2",
        &model,
        &["--ob1", "inter=64K/64K", "--ob1", "intra=4K/32K"],
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("eager limit = 65520 B (ob1; a rendezvous sends 65504 B first)"),
        "{}",
        text(&o)
    );
    let y = std::fs::read_to_string(&model).unwrap();
    assert!(
        y.contains("eager_limit: 4080") && y.contains("rendezvous_first_bytes: 32736"),
        "{y}"
    );
    for bad in ["inter=64K", "wire=1K/1K", "inter=8/64K"] {
        let o = ct(&["calibrate", "--out", s(&model), "--ob1", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", text(&o));
        assert!(text(&o).contains(&format!("--ob1 `{bad}`")), "{}", text(&o));
    }
    // One node: the inter-node link cannot be measured; a base model
    // supplies it.
    let o = calibrate(2, "2", &model, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--base"), "{}", text(&o));
    let base = model_file(&d, "base", 12.5, 1.5);
    let o = calibrate(2, "2", &model, &["--base", s(&base)]);
    assert!(o.status.success(), "{}", text(&o));
    let y = std::fs::read_to_string(&model).unwrap();
    assert!(
        y.contains("taken from") && y.contains("bandwidth_gbs: 12.5"),
        "{y}"
    );
}

/// The rows of `simulate --traffic`'s table: (label, the table's eight
/// numbers: bytes, root, then messages and bytes within a node, between
/// nodes of one group, between groups).
fn traffic_rows(out: &str) -> Vec<(String, [u64; 8])> {
    let table = out
        .split("traffic of one call per level")
        .nth(1)
        .expect("a traffic table");
    table
        .lines()
        .skip(2)
        .take_while(|l| !l.trim().is_empty() && !l.starts_with("simulated "))
        .map(|l| {
            let t: Vec<&str> = l.split_whitespace().collect();
            let (label, nums) = t.split_at(t.len() - 8);
            let n: Vec<u64> = nums.iter().map(|x| x.parse().unwrap()).collect();
            (label.join(" "), n.try_into().unwrap())
        })
        .collect()
}

/// The scale path at a size CI affords: every broadcast of the registry on
/// 3,584 ranks (64 nodes x 56, four groups of 16 nodes) counted per level,
/// every rank but the root reached; linear's counts by hand; and the O(p^2)
/// ring, too large to hold at 16,384 ranks, priced by its closed form and
/// said to be one.
#[test]
fn the_scale_path_counts_every_level_and_prices_the_ring_by_formula() {
    let dir = scratch("scale");
    let m = model_file(&dir, "grouped", 10.0, 2.0);
    let mut yaml = std::fs::read_to_string(&m).unwrap();
    yaml.push_str(
        "group: {nodes: 16, link: {latency_us: 3, overhead_us: 0.3, gap_us: 0.1, bandwidth_gbs: 10, eager_limit: 65536}}\n",
    );
    std::fs::write(&m, yaml).unwrap();
    let o = ct(&[
        "simulate",
        "--model",
        s(&m),
        "--layout",
        "64x56",
        "--collective",
        "bcast",
        "--sizes",
        "1M",
        "--root",
        "0",
        "--executions",
        "blocking",
        "--summary-only",
        "--traffic",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let out = text(&o);
    let rows = traffic_rows(&out);
    assert!(rows.len() >= 8, "{out}");
    let (p, n) = (3584u64, 1u64 << 20);
    for (label, [bytes, root, nm, nb, gm, gb, xm, xb]) in &rows {
        assert_eq!((*bytes, *root), (n, 0), "{label}");
        // Every rank but the root gets the whole message at least once;
        // three groups beyond the root's are reached over global links.
        assert!(
            nm + gm + xm >= p - 1 && nb + gb + xb >= (p - 1) * n,
            "{label}"
        );
        assert!(*xm >= 3 && *xb >= 3 * n, "{label}");
    }
    let linear = rows
        .iter()
        .find(|r| r.0.starts_with("linear"))
        .expect("linear");
    // 55 ranks of its node, 15 x 56 of its group, 48 x 56 beyond.
    assert_eq!(
        linear.1[2..],
        [55, 55 * n, 15 * 56, 15 * 56 * n, 48 * 56, 48 * 56 * n]
    );

    let test_ib = Path::new(env!("CARGO_MANIFEST_DIR")).join("tuning-tables/models/test-ib.yaml");
    let o = ct(&[
        "simulate",
        "--model",
        s(&test_ib),
        "--layout",
        "256x64",
        "--collective",
        "bcast",
        "-a",
        "scatter_allgather_ring",
        "--sizes",
        "1M",
        "--root",
        "0",
        "--executions",
        "blocking",
        "--summary-only",
        "--traffic",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let out = text(&o);
    assert!(
        out.contains("too large to simulate") && out.contains("closed form (not simulated)"),
        "{out}"
    );
    let rows = traffic_rows(&out);
    assert_eq!(rows.len(), 1, "{out}");
    assert!(
        rows[0].0.starts_with("closed form: scatter_allgather_ring"),
        "{out}"
    );
    // The ring: p - 1 chunks of 64 B (1 MiB / 16,384) around 16,384 ranks.
    let msgs: u64 = rows[0].1[2] + rows[0].1[4] + rows[0].1[6];
    assert!(msgs >= 16383 * 16383, "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}
