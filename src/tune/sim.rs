//! The tuner over a network model: an [`Oracle`] that simulates instead of
//! measuring. Results are deterministic, so each (candidate, size) is
//! simulated once and every run reuses it. A rotating root (what the tuner
//! measures by default) is simulated at [`rotation_roots`]: each root's time
//! is one repetition, as each root is one repetition of a measurement.

use std::collections::HashMap;

use colltune_algorithms::NodeMap;

use super::{Oracle, Request, TuneError};
use crate::bench::{RootPolicy, Subject};
use crate::progress::Progress;
use crate::record::{Sample, Writer};
use crate::sim::{rotation_roots, simulate_at, Model};

pub struct SimOracle<'m> {
    pub model: &'m Model,
    /// Node layout of each communicator (index = Request::comm).
    pub comms: Vec<NodeMap>,
    pub root: RootPolicy,
    writer: Option<Writer>,
    pub samples: Vec<Sample>,
    /// (comm, candidate, bytes) -> (root, time) per simulated root.
    memo: HashMap<(usize, String, u64), Vec<(usize, f64)>>,
    pub simulated: u64,
    pub progress: Progress,
}

impl<'m> SimOracle<'m> {
    pub fn new(
        model: &'m Model,
        comms: Vec<NodeMap>,
        root: RootPolicy,
        writer: Option<Writer>,
        progress: Progress,
    ) -> Self {
        SimOracle {
            model,
            comms,
            root,
            writer,
            samples: Vec::new(),
            memo: HashMap::new(),
            simulated: 0,
            progress,
        }
    }
}

impl Oracle for SimOracle<'_> {
    fn measure(&mut self, reqs: &[Request]) -> Result<Vec<Vec<f64>>, TuneError> {
        let mut out = Vec::with_capacity(reqs.len());
        for r in reqs {
            let nodes = &self.comms[r.comm];
            let key = (r.comm, r.cand.label(), r.bytes);
            if !self.memo.contains_key(&key) {
                self.progress
                    .set_message(format!("{} {} B", r.cand, r.bytes));
                let roots = match self.root {
                    RootPolicy::Fixed(x) => vec![x.min(nodes.size().saturating_sub(1))],
                    RootPolicy::Rotate => rotation_roots(r.cand.collective, nodes),
                };
                let mut times = Vec::with_capacity(roots.len());
                for root in roots {
                    let t = simulate_at(
                        self.model,
                        r.cand.collective,
                        &r.cand.spec,
                        r.cand.exec,
                        nodes,
                        r.bytes,
                        root,
                    )
                    .map_err(|e| TuneError::Other(format!("simulating {}: {e}", r.cand)))?;
                    self.simulated += 1;
                    times.push((root, t));
                }
                self.progress.inc(0);
                self.memo.insert(key.clone(), times);
            }
            let times = &self.memo[&key];
            let subject = Subject::Ours {
                collective: r.cand.collective,
                spec: r.cand.spec.clone(),
                exec: r.cand.exec,
            };
            let rows: Vec<Sample> = times
                .iter()
                .enumerate()
                .map(|(i, &(root, t))| {
                    crate::cli::simulate_sample(
                        self.model,
                        nodes,
                        &subject,
                        r.bytes,
                        (r.run, i as u32 + 1),
                        root,
                        t,
                    )
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
