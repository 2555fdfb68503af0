//! The tuner over a network model: an [`Oracle`] that simulates instead of
//! measuring. Results are deterministic, so each (candidate, size) is
//! simulated once and every run reuses it. A rotating root (what the tuner
//! measures by default) is simulated at [`rotation_roots`]: each root's time
//! is one repetition, as each root is one repetition of a measurement.
//!
//! A candidate is abandoned, unrecorded, once more than half its roots have
//! taken [`CUTOFF`] times the best candidate's time at that size (its median
//! could then not come within 3x of the best; the search would drop it):
//! a slow ring on thousands of ranks costs millions of events to finish but
//! few to pass the mark. `--exhaustive` simulates everything.

use std::collections::HashMap;

use colltune_algorithms::NodeMap;

use super::{Oracle, Request, TuneError};
use crate::measure::method::{RootPolicy, Subject};
use crate::measure::record::{Sample, Writer};
use crate::model::sim::{rotation_roots, simulate_within, Model, SimError};
use crate::progress::Progress;

/// Abandon a candidate past this multiple of the best time at its size.
pub const CUTOFF: f64 = 3.0;

/// What became of one (communicator, candidate, size).
enum Simulated {
    /// (root, time) per simulated root.
    Times(Vec<(usize, f64)>),
    /// Abandoned past this many microseconds.
    Abandoned(f64),
}

pub struct SimOracle<'m> {
    pub model: &'m Model,
    /// Node layout of each communicator (index = Request::comm).
    pub comms: Vec<NodeMap>,
    pub root: RootPolicy,
    writer: Option<Writer>,
    pub samples: Vec<Sample>,
    memo: HashMap<(usize, String, u64), Simulated>,
    /// (comm, bytes) -> the best candidate's median over roots so far.
    best: HashMap<(usize, u64), f64>,
    /// Whether slow candidates may be abandoned (not with --exhaustive).
    pub cutoff: bool,
    /// Candidates abandoned.
    pub abandoned: u64,
    /// Whether samples say each communicator's placement over its nodes
    /// (`tune --model --mapping`), so the table's rules hold for it.
    pub placed: bool,
    /// Candidates too large to simulate, with why.
    pub skipped: Vec<String>,
    pub simulated: u64,
    pub progress: Box<dyn Progress + 'm>,
}

impl<'m> SimOracle<'m> {
    pub fn new(
        model: &'m Model,
        comms: Vec<NodeMap>,
        root: RootPolicy,
        writer: Option<Writer>,
        progress: Box<dyn Progress + 'm>,
    ) -> Self {
        SimOracle {
            model,
            comms,
            root,
            writer,
            samples: Vec::new(),
            memo: HashMap::new(),
            best: HashMap::new(),
            cutoff: true,
            abandoned: 0,
            placed: false,
            skipped: Vec::new(),
            simulated: 0,
            progress,
        }
    }
}

impl Oracle for SimOracle<'_> {
    fn exact(&self) -> bool {
        true
    }

    fn measure(&mut self, reqs: &[Request]) -> Result<Vec<Vec<f64>>, TuneError> {
        let mut out = Vec::with_capacity(reqs.len());
        for r in reqs {
            let nodes = &self.comms[r.comm];
            let key = (r.comm, r.cand.label(), r.bytes);
            if !self.memo.contains_key(&key) {
                self.progress
                    .set_message(&format!("{} {} B", r.cand, r.bytes));
                let roots = match self.root {
                    RootPolicy::Fixed(x) => vec![x.min(nodes.size().saturating_sub(1))],
                    RootPolicy::Rotate => rotation_roots(r.cand.collective, nodes),
                };
                let limit = match self.best.get(&(r.comm, r.bytes)) {
                    Some(&b) if self.cutoff => b * CUTOFF,
                    _ => f64::INFINITY,
                };
                let sim = |root, limit| {
                    simulate_within(
                        self.model,
                        r.cand.collective,
                        &r.cand.spec,
                        r.cand.exec,
                        nodes,
                        r.bytes,
                        root,
                        limit,
                    )
                };
                let failed = |e: SimError| TuneError::Other(format!("simulating {}: {e}", r.cand));
                let mut times = Vec::with_capacity(roots.len());
                let mut over = Vec::new();
                let mut too_large = None;
                for &root in &roots {
                    self.simulated += 1;
                    match sim(root, limit) {
                        Ok(Some(t)) => times.push((root, t)),
                        Ok(None) => over.push(root),
                        Err(e @ SimError::TooLarge { .. }) => {
                            too_large = Some(format!("{}: {e}", r.cand));
                            break;
                        }
                        Err(e) => return Err(failed(e)),
                    }
                    if over.len() * 2 > roots.len() {
                        break;
                    }
                }
                let outcome = if let Some(why) = too_large {
                    // O(p^2) schedules on huge layouts: not a candidate here.
                    self.skipped.push(why);
                    Simulated::Abandoned(f64::INFINITY)
                } else if over.len() * 2 > roots.len() {
                    self.abandoned += 1;
                    Simulated::Abandoned(limit)
                } else {
                    // A few slow roots: their times count, finish them.
                    for root in over {
                        self.simulated += 1;
                        let t = sim(root, f64::INFINITY).map_err(failed)?.expect("no limit");
                        times.push((root, t));
                    }
                    times.sort_by_key(|&(root, _)| roots.iter().position(|&x| x == root));
                    let v: Vec<f64> = times.iter().map(|&(_, t)| t).collect();
                    let m = crate::measure::stats::median(&v);
                    let b = self.best.entry((r.comm, r.bytes)).or_insert(m);
                    *b = b.min(m);
                    Simulated::Times(times)
                };
                self.progress.inc(0);
                self.memo.insert(key.clone(), outcome);
            }
            let times = match &self.memo[&key] {
                Simulated::Times(t) => t,
                Simulated::Abandoned(limit) => {
                    // The search sees a lower bound; nothing is recorded.
                    out.push(vec![*limit]);
                    continue;
                }
            };
            let subject = Subject::Ours(r.cand.0.clone());
            let placement = if self.placed {
                crate::model::simulate::placement_of(nodes)
            } else {
                String::new()
            };
            let rows: Vec<Sample> = times
                .iter()
                .enumerate()
                .map(|(i, &(root, t))| {
                    crate::model::simulate::sample(
                        self.model,
                        nodes,
                        &subject,
                        r.bytes,
                        (r.run, i as u32 + 1),
                        root,
                        t,
                    )
                })
                .map(|s| Sample {
                    placement: placement.clone(),
                    ..s
                })
                .collect();
            if let Some(w) = self.writer.as_mut() {
                w.write(&rows)?;
            }
            self.samples.extend(rows);
            out.push(times.iter().map(|&(_, t)| t).collect());
        }
        Ok(out)
    }
}
