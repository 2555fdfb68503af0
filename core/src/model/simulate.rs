//! Simulated measurements in the raw-sample schema: the cluster's layout
//! as the user gives it, and one simulated repetition as a [`Sample`] row,
//! so every inspection command works on simulated data.

use colltune_algorithms::{Collective, NodeMap};

use crate::measure::method::Subject;
use crate::measure::record::Sample;
use crate::model::sim::Model;

/// A simulated layout that cannot be built, with what to give instead.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct LayoutError(pub String);

/// The simulated cluster's layout from --ranks/--ppn or --layout.
pub fn layout(
    ranks: Option<usize>,
    ppn: Option<usize>,
    layout: Option<&str>,
) -> Result<NodeMap, LayoutError> {
    if let Some(l) = layout {
        return NodeMap::parse(l).map_err(|e| LayoutError(format!("--layout: {e}")));
    }
    let ranks = ranks.ok_or_else(|| LayoutError("give --ranks (and --ppn) or --layout".into()))?;
    let ppn = ppn.unwrap_or(ranks);
    if ranks == 0 || ppn == 0 {
        return Err(LayoutError("--ranks and --ppn must be at least 1".into()));
    }
    let mut sizes = vec![ppn; ranks / ppn];
    if ranks % ppn != 0 {
        sizes.push(ranks % ppn);
    }
    NodeMap::blocks(&sizes).map_err(|e| LayoutError(e.to_string()))
}

/// The placement class of a simulated communicator's ranks over its nodes
/// (`block` or `cyclic`; the simulator has no sockets), as the samples'
/// `placement` column writes it; empty where it is neither.
pub fn placement_of(nodes: &NodeMap) -> String {
    let node_of: Vec<usize> = (0..nodes.size()).map(|r| nodes.node_of(r)).collect();
    crate::model::placed::detect::<_, u8>(&node_of, None)
        .placement()
        .map(|p| p.to_string())
        .unwrap_or_default()
}

/// One simulated sample row: repetition `(run, rep)` from `root`.
pub fn sample(
    m: &Model,
    nodes: &NodeMap,
    s: &Subject,
    bytes: u64,
    (run, rep): (u32, u32),
    root: usize,
    t: f64,
) -> Sample {
    Sample {
        collective: s.collective().to_string(),
        algorithm: s.algorithm(),
        spec: s.spec(),
        execution: s.execution().into(),
        ranks: nodes.size() as u32,
        ppn: nodes.max_ppn() as u32,
        nodes: nodes.num_nodes() as u32,
        layout: nodes.to_string(),
        bytes,
        root: if s.collective() == Collective::Swap {
            -1
        } else {
            root as i64
        },
        cache: "warm".into(),
        iterations: 1,
        overlap_us: 0.0,
        // every rank starts the call at time 0: one synchronised call
        pattern: crate::measure::method::Pattern::Synchronized.name().into(),
        run,
        rep,
        time_us: t,
        outlier: 0,
        mpi: format!("model {}", m.name),
        host: "simulator".into(),
        source: format!("simulated:{}", m.name),
        colltune: env!("CARGO_PKG_VERSION").into(),
        // `tune --model --mapping` says it ([`placed`](crate::model::placed)).
        placement: String::new(),
        call: crate::measure::record::Call::Bcast.name().into(),
        overlap: None,
    }
}
