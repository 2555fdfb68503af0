//! The tuner on MPI: rank 0 runs the search and broadcasts each batch of
//! measurements to every rank; all ranks of the communicator concerned
//! measure it together; rank 0 streams the samples to the raw CSV as they
//! are taken. Resuming replays the search with the CSV's samples as a cache,
//! so no completed point is measured twice.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::bench::{BenchError, Measurer, Outcome, Point, Skips};
use crate::transport::mpi::{Comm, Control, MpiError};
use colltune_core::libraries::library::LibraryChoice;
use colltune_core::measure::method::{Method, Origin, Subject};
use colltune_core::measure::record::{Sample, Writer};
use colltune_core::progress::Progress;
use colltune_core::tune::resume::{key_of, Key};
use colltune_core::tune::wire::{decode, encode};
use colltune_core::tune::{Oracle, Request, TuneError};

/// Rank 0's side (the oracle) and every rank's measuring loop.
pub struct MpiOracle<'c> {
    comms: &'c [Option<Comm>],
    method: Method,
    prov: Origin,
    measurers: Vec<Option<Measurer<'c>>>,
    cache: HashMap<Key, Vec<Sample>>,
    writer: Option<Writer>,
    pub progress: Box<dyn Progress + 'c>,
    /// Every sample of this tune (resumed and new), on rank 0.
    pub samples: Vec<Sample>,
    pub measured: u64,
    pub reused: u64,
    /// Candidates that cannot run here (every rank learns it alike).
    pub skips: Skips,
    /// MPICH's broadcast algorithms as this library numbers them (read on
    /// every rank: `bench::mpich::bcast_algorithms`), for `mpich` candidates.
    pub mpich_offered: Vec<colltune_core::libraries::mpich::Choice>,
    stop: Arc<AtomicBool>,
}

impl<'c> MpiOracle<'c> {
    pub fn new(
        comms: &'c [Option<Comm>],
        method: Method,
        prov: Origin,
        resumed: Vec<Sample>,
        writer: Option<Writer>,
        progress: Box<dyn Progress + 'c>,
        stop: Arc<AtomicBool>,
    ) -> Self {
        let mut cache: HashMap<Key, Vec<Sample>> = HashMap::new();
        for s in &resumed {
            cache.entry(key_of(s)).or_default().push(s.clone());
        }
        MpiOracle {
            comms,
            measurers: comms
                .iter()
                .map(|c| {
                    c.as_ref()
                        .map(|c| Measurer::new(c, method.clone(), prov.clone()))
                })
                .collect(),
            method,
            prov,
            cache,
            writer,
            progress,
            samples: resumed,
            measured: 0,
            reused: 0,
            skips: Skips::default(),
            mpich_offered: Vec::new(),
            stop,
        }
    }

    fn world(&self) -> &'c Comm {
        self.comms[0].as_ref().expect("every rank is in the world")
    }

    fn cache_key(&self, r: &Request) -> Option<Key> {
        let comm = self.comms.get(r.comm)?.as_ref()?;
        let n = comm.nodes();
        Some((
            comm.size() as u32,
            n.max_ppn() as u32,
            n.num_nodes() as u32,
            r.cand.collective.to_string(),
            r.cand.spec.to_string(),
            // As samples write it: `library` for the library's algorithms.
            r.cand.exec_name().to_string(),
            r.bytes,
            r.run,
        ))
    }

    /// Measures one request on the ranks of its communicator; nothing for
    /// a candidate that cannot run here.
    fn measure_one(&mut self, r: &Request) -> Result<Vec<Sample>, TuneError> {
        let label = r.cand.label();
        if self.skips.is_unavailable(&label) {
            return Ok(Vec::new());
        }
        let Some(Some(m)) = self.measurers.get_mut(r.comm) else {
            return Ok(Vec::new());
        };
        m.method.budget =
            Duration::from_secs_f64(self.method.budget.as_secs_f64() * r.budget_scale);
        let subject = match r.cand.forced() {
            // The MPI library's own algorithm, forced on a duplicate.
            Some(LibraryChoice::Tuned(f)) => Subject::OmpiTuned {
                tuned: f.tuned(),
                segment: u64::from(f.segment),
            },
            // coll/adapt's, on a duplicate adapt serves.
            Some(LibraryChoice::Adapt(a)) => Subject::OmpiAdapt {
                choice: colltune_core::libraries::ompi::adapt::Choice {
                    id: a.id,
                    name: a.name().into(),
                },
                segment: u64::from(a.segment),
            },
            // MPICH's, by the value this library gives its name.
            Some(LibraryChoice::Mpich(m)) => {
                match self.mpich_offered.iter().find(|c| c.name == m.name) {
                    Some(c) => Subject::Mpich { choice: c.clone() },
                    None => return Ok(Vec::new()),
                }
            }
            // Not a blocking broadcast's candidate (the candidate space
            // never makes one): nothing measured.
            Some(LibraryChoice::Libnbc(_) | LibraryChoice::MpichIbcast(_)) => return Ok(Vec::new()),
            None => Subject::Ours(r.cand.0.clone()),
        };
        let pt = Point {
            subject: &subject,
            bytes: r.bytes,
            iterations: 1,
            overlap_us: 0.0,
        };
        match m.try_measure(&pt, r.run, &mut self.skips)? {
            Outcome::Measured(s) => Ok(s),
            // MPICH refused the algorithm for these arguments (its `error`
            // fallback, on every rank alike): no sample, so never a choice
            // at this point.
            Outcome::NotApplicable(e) => {
                self.progress
                    .println(&format!("colltune tune: not at {} bytes: {e}", r.bytes));
                Ok(Vec::new())
            }
            Outcome::Unavailable(e) => {
                self.progress
                    .println(&format!("colltune tune: excluding {label}: {e}"));
                Ok(Vec::new())
            }
            Outcome::Skipped => Ok(Vec::new()),
        }
    }

    /// Every rank but 0: measure each broadcast plan until an empty one.
    pub fn serve(&mut self) -> Result<(), TuneError> {
        loop {
            let plan = self.world().bcast_bytes(&[], 0)?;
            if plan.is_empty() {
                return Ok(());
            }
            let text = String::from_utf8_lossy(&plan).into_owned();
            for line in text.lines() {
                let r = decode(line)?;
                self.measure_one(&r)?;
            }
        }
    }

    /// Rank 0: tells every rank the search is over.
    pub fn finish(&mut self) -> Result<(), TuneError> {
        self.world().bcast_bytes(&[], 0)?;
        self.progress.finish();
        Ok(())
    }

    pub fn provenance(&self) -> &Origin {
        &self.prov
    }
}

impl Oracle for MpiOracle<'_> {
    fn measure(&mut self, reqs: &[Request]) -> Result<Vec<Vec<f64>>, TuneError> {
        let todo: Vec<&Request> = reqs
            .iter()
            .filter(|r| {
                self.cache_key(r)
                    .is_some_and(|k| !self.cache.contains_key(&k))
            })
            .collect();
        self.reused += (reqs.len() - todo.len()) as u64;
        if !todo.is_empty() {
            let plan: String = todo.iter().map(|r| encode(r) + "\n").collect();
            self.world().bcast_bytes(plan.as_bytes(), 0)?;
            for r in todo {
                self.progress
                    .set_message(&format!("{} {} B run {}", r.cand, r.bytes, r.run));
                let got = self.measure_one(r)?;
                if let Some(w) = self.writer.as_mut() {
                    w.write(&got)?;
                }
                let key = self.cache_key(r).expect("checked above");
                self.samples.extend(got.iter().cloned());
                self.cache.insert(key, got);
                self.measured += 1;
                self.progress.inc(0);
            }
        }
        Ok(reqs
            .iter()
            .map(|r| {
                self.cache_key(r)
                    .and_then(|k| self.cache.get(&k))
                    .map(|s| s.iter().map(|x| x.time_us).collect())
                    .unwrap_or_default()
            })
            .collect())
    }

    fn should_stop(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

impl From<BenchError> for TuneError {
    fn from(e: BenchError) -> Self {
        TuneError::Measure(Box::new(e))
    }
}

impl From<MpiError> for TuneError {
    fn from(e: MpiError) -> Self {
        TuneError::Measure(Box::new(e))
    }
}
