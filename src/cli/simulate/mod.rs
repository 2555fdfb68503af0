//! `colltune simulate`: times per algorithm and size on a network model, in
//! the raw CSV format of `colltune bench`, so every inspection command
//! (fit, report, plot, table build) works on simulated data.

use std::path::PathBuf;

use super::args::{parse_root, Cluster, Selected, Selection};
use super::{Code, UsageError};
use colltune_algorithms::Variant;
use colltune_core::measure::method::expand;
use colltune_core::measure::method::{RootPolicy, Subject};
use colltune_core::measure::record::Writer;
use colltune_core::measure::report::{comparison, imb_tables, series};
use colltune_core::model::compare::{self, Options, SelfAgreement, Verdict};
use colltune_core::model::sim::{
    closed_form, rotation_roots, simulate_counted, Model, Tier, Traffic,
};
use colltune_core::model::simulate::sample;

mod against;
use against::compare;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The network model (YAML; see tuning-tables/models/).
    #[arg(long)]
    pub model: PathBuf,
    #[command(flatten)]
    pub cluster: Cluster,
    #[command(flatten)]
    sel: Selection,
    /// Root: `rotate` (as bench and tune measure: a repetition per root,
    /// on large communicators the roots that differ, see ARCHITECTURE.md)
    /// or a rank.
    #[arg(long, default_value = "rotate")]
    root: String,
    /// Raw samples (one simulated repetition per point).
    #[arg(long)]
    csv: Option<PathBuf>,
    #[arg(long)]
    summary_only: bool,
    /// Also print each algorithm's messages and bytes per level of the
    /// network (within a node, between nodes of one group, between groups:
    /// the model's `group` level) for one call from the first root.
    #[arg(long)]
    traffic: bool,
    /// Validate the model: simulate every point of this measured CSV (its
    /// layouts, algorithms and sizes; other selection flags are ignored)
    /// and report per size the measured and the predicted winner, and per
    /// point the prediction's error.
    #[arg(long, value_name = "MEASURED.csv")]
    compare: Option<PathBuf>,
    /// With --compare: a predicted time counts as right within this
    /// fraction of the measured one (both: each root's time averaged over
    /// the roots measured).
    #[arg(long, default_value_t = 0.3)]
    tolerance: f64,
    /// With --compare: a predicted winner counts as a near match when its
    /// measured median is within this fraction of the measured best.
    #[arg(long, default_value_t = 0.05)]
    near: f64,
}

pub fn run(a: Args) -> anyhow::Result<Code> {
    let m = Model::load(&a.model).map_err(|e| UsageError(e.to_string()))?;
    if let Some(measured) = &a.compare {
        return compare(&a, &m, measured);
    }
    let nodes = a.cluster.nodes()?;
    let placed = a.cluster.mapping()?.is_some();
    let Selected {
        sizes,
        per_coll,
        sweeps,
        execs,
    } = a.sel.resolve()?;
    let root = parse_root(&a.root)?;
    if let RootPolicy::Fixed(r) = root {
        if r >= nodes.size() {
            return Err(UsageError(format!(
                "--root `{r}`: write rotate or a rank below {}",
                nodes.size()
            ))
            .into());
        }
    }
    let mut writer = match &a.csv {
        Some(p) => Some(Writer::open(p, false)?),
        None => None,
    };
    let mut samples = Vec::new();
    // Per algorithm and size: the first root's call's traffic.
    let mut traffic: Vec<(String, u64, usize, Traffic)> = Vec::new();
    let t0 = std::time::Instant::now();
    for (c, mine) in per_coll {
        for s in expand(c, &mine, &sweeps, &execs, nodes.num_nodes() > 1)
            .map_err(|e| UsageError(e.to_string()))?
        {
            let Subject::Ours(Variant { spec, exec, .. }) = &s else {
                continue;
            };
            let roots = match root {
                RootPolicy::Fixed(x) => vec![x],
                RootPolicy::Rotate => rotation_roots(c, &nodes),
            };
            'sizes: for &b in &sizes {
                for (i, &r) in roots.iter().enumerate() {
                    let t = match simulate_counted(&m, c, spec, *exec, &nodes, b, r, f64::INFINITY)
                    {
                        Ok((t, counted)) => {
                            if i == 0 {
                                traffic.push((s.label(), b, r, counted));
                            }
                            t.expect("no limit")
                        }
                        Err(e @ colltune_core::model::sim::SimError::TooLarge { .. }) => {
                            // Priced by its closed form where it has one
                            // (said so; no sample row: not simulated).
                            let Some(f) = closed_form(&m, c, spec, &nodes, b, r) else {
                                outln!("skipped {}: {e}", s.label());
                                break 'sizes;
                            };
                            outln!(
                                "{} at {b} bytes from root {r}: {e}; {}: {:.1} us",
                                s.label(),
                                f.formula,
                                f.time_us
                            );
                            traffic.push((format!("closed form: {}", s.label()), b, r, f.traffic));
                            continue 'sizes;
                        }
                        Err(e) => return Err(e.into()),
                    };
                    let mut row = sample(&m, &nodes, &s, b, (1, i as u32 + 1), r, t);
                    if placed {
                        row.placement = colltune_core::model::simulate::placement_of(&nodes);
                    }
                    if let Some(w) = writer.as_mut() {
                        w.write(std::slice::from_ref(&row))?;
                    }
                    samples.push(row);
                }
            }
        }
    }
    let all = series(&samples);
    if !a.summary_only {
        out!("{}", imb_tables(&all));
    }
    out!("{}", comparison(&all));
    if a.traffic {
        out!("{}", traffic_table(&m, &traffic));
    }
    outln!(
        "simulated {} points on {} ranks ({}) with model {} in {:.2} s",
        samples.len(),
        nodes.size(),
        nodes,
        m.name,
        t0.elapsed().as_secs_f64()
    );
    if let Some(w) = &writer {
        outln!("raw samples: {}", w.path().display());
    }
    Ok(Code::Ok)
}

/// `simulate --traffic`: per algorithm and size, one call's messages and
/// bytes within a node, between nodes of one group, between groups.
fn traffic_table(m: &Model, rows: &[(String, u64, usize, Traffic)]) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let groups = match &m.group {
        Some(g) => format!("groups of {} nodes", g.nodes),
        None => "no group level: one group".into(),
    };
    let _ = writeln!(
        o,
        "\ntraffic of one call per level ({groups}): messages and bytes {}, {}, {}",
        Tier::Node.describe(),
        Tier::Group.describe(),
        Tier::Global.describe()
    );
    let _ = write!(o, "{:<44} {:>10} {:>5}", "algorithm", "bytes", "root");
    for t in Tier::ALL {
        let _ = write!(
            o,
            " {:>9} {:>14}",
            format!("{}-msgs", t.name()),
            format!("{}-bytes", t.name())
        );
    }
    o.push('\n');
    for (label, bytes, root, tr) in rows {
        let _ = write!(o, "{:<44} {:>10} {:>5}", trunc(label, 44), bytes, root);
        for t in Tier::ALL {
            let _ = write!(o, " {:>9} {:>14}", tr.messages_at(t), tr.bytes_at(t));
        }
        o.push('\n');
    }
    o
}

fn trunc(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('~');
        t
    }
}
