//! Leonardo, 256 nodes x 4 ranks (`cargo bench --bench leonardo`): the
//! simulated times, on `leonardo-dragonfly.yaml`, of colltune's `bine` and
//! `bine_bdw` and of Open MPI 4.1's forced coll/tuned broadcasts (their own
//! trees, `model::predict::trees`), beside the published per-call medians
//! of the Bine paper's measurements where they are given (`-- --data DIR`,
//! DIR the `256x4/` folder of `tar xzf
//! /work/shared/realclusters/leonardo-bcast.tar.gz`: one file per size and
//! algorithm, a header then the slowest rank's time per call in ns, the
//! first call a warm-up). `-- --model FILE` simulates on another model of
//! the machine (one `colltune calibrate --collectives` fitted, say).
//!
//! Times are the slowest rank's, root 0, the blocking execution: what the
//! published `highest` column measures. The model is not calibrated from
//! collectives (its figures are published ping-pong and assumed: see its
//! `source`), so the ratios say how far the model is, not how fast the
//! machine is.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use colltune_algorithms::{AlgoSpec, Collective, Execution, NodeMap};
use colltune_core::model::placement::{Layout, Mapping};
use colltune_core::model::predict::trees;
use colltune_core::model::sim::{simulate_at, Model};

const SIZES: [u64; 8] = [32, 256, 2048, 16384, 131072, 1 << 20, 8 << 20, 64 << 20];
/// Open MPI's forced algorithms measured there, by coll/tuned number.
const OMPI: [(u32, &str); 6] = [
    (4, "split_binary"),
    (5, "binary"),
    (6, "binomial"),
    (7, "knomial"),
    (8, "scatter_allgather"),
    (9, "scatter_allgather_ring"),
];
/// The Bine paper's own broadcasts measured there.
const BINE: [&str; 5] = [
    "bine_lat",
    "bine_lat_new",
    "bine_lat_i_new",
    "bine_lat_reversed",
    "bine_bdw_remap",
];

/// Median (us) of a published per-call file, warm-up dropped.
fn median(dir: &Path, bytes: u64, alg: &str, lib: &str) -> Option<f64> {
    let f = dir.join(format!("{}_{alg}_{lib}_int32.csv", bytes / 4));
    let text = std::fs::read_to_string(f).ok()?;
    let mut v: Vec<f64> = text
        .lines()
        .skip(2)
        .filter_map(|l| l.trim().parse::<f64>().ok())
        .collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some((v[(n - 1) / 2] + v[n / 2]) / 2e3)
}

/// The fastest of `(name, time)`.
fn best<'a>(xs: impl Iterator<Item = (&'a str, f64)>) -> Option<(&'a str, f64)> {
    xs.min_by(|a, b| a.1.total_cmp(&b.1))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let data: Option<PathBuf> = args
        .iter()
        .position(|a| a == "--data")
        .and_then(|i| args.get(i + 1))
        .map(PathBuf::from);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // `--model FILE`: another model of the machine, e.g. one `colltune
    // calibrate --collectives` fitted to the 256 x 1 set (out of sample
    // here); default the shipped one, not calibrated from collectives.
    let model = args
        .iter()
        .position(|a| a == "--model")
        .and_then(|i| args.get(i + 1))
        .map(PathBuf::from);
    let calibrated = model.is_some();
    let path = model.unwrap_or_else(|| root.join("tuning-tables/models/leonardo-dragonfly.yaml"));
    let m = match Model::load(&path) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("leonardo: {}: {e}", path.display());
            std::process::exit(2);
        }
    };
    let layout = Layout::parse("node:256,core:4").expect("a layout");
    let nodes = NodeMap::blocks(&[4; 256]).expect("a layout");
    println!(
        "Leonardo 256 x 4 (1,024 ranks), root 0; simulated on model {} ({}); published: \
         per-call medians, slowest rank; us",
        m.name,
        if calibrated {
            format!("{}", path.display())
        } else {
            "the shipped model, not calibrated from collectives".into()
        }
    );
    println!(
        "{:>9} | {:>22} {:>22} | {:>9} {:>9} {:>7} | {:>32} | {:>6} {:>6}",
        "bytes",
        "published best Bine",
        "published best OMPI",
        "sim bine",
        "sim bdw",
        "bine/",
        "sim OMPI (same algorithm; best)",
        "pub",
        "sim"
    );
    for bytes in SIZES {
        let sim = |name: &str| {
            let spec = AlgoSpec::parse(name).expect("a spec");
            simulate_at(
                &m,
                Collective::Bcast,
                &spec,
                Execution::Blocking,
                &nodes,
                bytes,
                0,
            )
            .expect("simulated")
        };
        let (bine, bdw) = (sim("bine"), sim("bine_bdw"));
        let mut ompi = BTreeMap::new();
        for (id, name) in OMPI {
            let each = trees::simulate(&m, &layout, Mapping::Core, id, 1024, bytes)
                .expect("an Open MPI tree");
            ompi.insert(name, each.iter().fold(0f64, |a, &b| a.max(b)));
        }
        let dir = data.as_deref();
        let pub_bine = dir.and_then(|d| {
            best(
                BINE.iter()
                    .filter_map(|a| median(d, bytes, a, "over").map(|t| (*a, t))),
            )
        });
        let pub_ompi = dir.and_then(|d| {
            best(
                OMPI.iter()
                    .filter_map(|(_, a)| median(d, bytes, a, "ompi").map(|t| (*a, t))),
            )
        });
        let ours = bine.min(bdw);
        let sim_same = pub_ompi.map(|(a, _)| ompi[a]);
        let sim_best = best(ompi.iter().map(|(a, t)| (*a, *t))).expect("some");
        let show =
            |x: Option<(&str, f64)>| x.map_or("-".to_string(), |(a, t)| format!("{t:.1} {a}"));
        println!(
            "{bytes:>9} | {:>22} {:>22} | {bine:>9.1} {bdw:>9.1} {:>7} | {:>32} | {:>6} {:>6.2}",
            show(pub_bine),
            show(pub_ompi),
            pub_bine.map_or("-".into(), |(_, t)| format!("{:.2}x", ours / t)),
            format!(
                "{}; {:.1} {}",
                sim_same.map_or("-".into(), |t| format!("{t:.1}")),
                sim_best.1,
                sim_best.0
            ),
            match (pub_bine, pub_ompi) {
                (Some(b), Some(o)) => format!("{:.2}", b.1 / o.1),
                _ => "-".into(),
            },
            ours / sim_best.1,
        );
    }
    println!(
        "bine/: colltune's faster Bine (simulated) over the published best Bine; \
         pub: published best Bine / best Open MPI; sim: simulated best Bine / best Open MPI"
    );
}
