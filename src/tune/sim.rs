//! The tuner over a network model: an [`Oracle`] that simulates instead of
//! measuring. Results are deterministic, so each (candidate, size) is
//! simulated once and every run reuses it.

use std::collections::HashMap;

use colltune_algorithms::NodeMap;

use super::{Oracle, Request, TuneError};
use crate::bench::Subject;
use crate::progress::Progress;
use crate::record::{Sample, Writer};
use crate::sim::{simulate, Model};

pub struct SimOracle<'m> {
    pub model: &'m Model,
    /// Node layout of each communicator (index = Request::comm).
    pub comms: Vec<NodeMap>,
    writer: Option<Writer>,
    pub samples: Vec<Sample>,
    memo: HashMap<(usize, String, u64), f64>,
    pub simulated: u64,
    pub progress: Progress,
}

impl<'m> SimOracle<'m> {
    pub fn new(
        model: &'m Model,
        comms: Vec<NodeMap>,
        writer: Option<Writer>,
        progress: Progress,
    ) -> Self {
        SimOracle {
            model,
            comms,
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
            let t = match self.memo.get(&key) {
                Some(&t) => t,
                None => {
                    self.progress
                        .set_message(format!("{} {} B", r.cand, r.bytes));
                    let t = simulate(
                        self.model,
                        r.cand.collective,
                        &r.cand.spec,
                        r.cand.exec,
                        nodes,
                        r.bytes,
                    )
                    .map_err(|e| TuneError::Other(format!("simulating {}: {e}", r.cand)))?;
                    self.simulated += 1;
                    self.progress.inc(0);
                    self.memo.insert(key, t);
                    t
                }
            };
            let subject = Subject::Ours {
                collective: r.cand.collective,
                spec: r.cand.spec.clone(),
                exec: r.cand.exec,
            };
            let row = crate::cli::simulate_sample(self.model, nodes, &subject, r.bytes, r.run, t);
            if let Some(w) = self.writer.as_mut() {
                w.write(std::slice::from_ref(&row))?;
            }
            self.samples.push(row);
            out.push(vec![t]);
        }
        Ok(out)
    }
}
