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
use colltune_core::measure::record::{Call, Sample, Writer};
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

    fn cache_key(&self, r: &Request, call: Call) -> Option<Key> {
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
            call.name().to_string(),
        ))
    }

    /// Measures one request on the ranks of its communicator; nothing for
    /// a candidate that cannot run here.
    fn measure_one(&mut self, r: &Request, call: Call) -> Result<Vec<Sample>, TuneError> {
        let label = match (call.is_nonblocking(), r.cand.forced()) {
            (true, Some(choice)) => Subject::LibraryCall { call, choice }.label(),
            _ => r.cand.label(),
        };
        if self.skips.is_unavailable(&label) {
            return Ok(Vec::new());
        }
        let Some(Some(m)) = self.measurers.get_mut(r.comm) else {
            return Ok(Vec::new());
        };
        m.method.budget =
            Duration::from_secs_f64(self.method.budget.as_secs_f64() * r.budget_scale);
        let subject = match r.cand.forced() {
            // The library's nonblocking or persistent broadcast.
            Some(choice) if call.is_nonblocking() => Subject::LibraryCall { call, choice },
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
            None if call.is_nonblocking() => return Ok(Vec::new()),
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
                let (call, r) = decode_line(line)?;
                self.measure_one(&r, call)?;
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

impl MpiOracle<'_> {
    /// Rank 0: measures `reqs` of `call` not yet in the cache (every rank
    /// told by one broadcast plan), streaming the samples to the CSV; each
    /// request's times to completion (the samples without computation).
    fn measure_calls(&mut self, call: Call, reqs: &[Request]) -> Result<Vec<Vec<f64>>, TuneError> {
        let todo: Vec<&Request> = reqs
            .iter()
            .filter(|r| {
                self.cache_key(r, call)
                    .is_some_and(|k| !self.cache.contains_key(&k))
            })
            .collect();
        self.reused += (reqs.len() - todo.len()) as u64;
        if !todo.is_empty() {
            let plan: String = todo.iter().map(|r| encode_line(call, r) + "\n").collect();
            self.world().bcast_bytes(plan.as_bytes(), 0)?;
            for r in todo {
                self.progress
                    .set_message(&format!("{call} {} {} B run {}", r.cand, r.bytes, r.run));
                let got = self.measure_one(r, call)?;
                if let Some(w) = self.writer.as_mut() {
                    w.write(&got)?;
                }
                let key = self.cache_key(r, call).expect("checked above");
                self.samples.extend(got.iter().cloned());
                self.cache.insert(key, got);
                self.measured += 1;
                self.progress.inc(0);
            }
        }
        Ok(reqs
            .iter()
            .map(|r| {
                self.cache_key(r, call)
                    .and_then(|k| self.cache.get(&k))
                    .map(|s| {
                        s.iter()
                            .filter(|x| x.overlap_us <= 0.0)
                            .map(|x| x.time_us)
                            .collect()
                    })
                    .unwrap_or_default()
            })
            .collect())
    }

    /// Rank 0: the library's nonblocking and persistent broadcasts
    /// (`calls`: `ibcast`, `bcast_init`) under each of its nonblocking
    /// algorithms (`choices`, its own decision among them), on every
    /// communicator of the tune (`on`), at every size, `runs` runs each
    /// (run-major, so drifts hit every choice alike). Every point is
    /// measured: these spaces are small (five choices on Open MPI).
    pub fn sweep_calls(
        &mut self,
        calls: &[Call],
        choices: &[LibraryChoice],
        on: &[usize],
        sizes: &[u64],
        runs: u32,
    ) -> Result<(), TuneError> {
        for &call in calls.iter().filter(|c| c.is_nonblocking()) {
            for run in 1..=runs {
                if self.should_stop() {
                    return Ok(());
                }
                let reqs: Vec<Request> = on
                    .iter()
                    .flat_map(|&comm| {
                        sizes.iter().flat_map(move |&bytes| {
                            choices.iter().map(move |&c| Request {
                                comm,
                                cand: colltune_core::tune::Candidate::library(c),
                                bytes,
                                run,
                                budget_scale: 1.0,
                            })
                        })
                    })
                    .collect();
                self.measure_calls(call, &reqs)?;
            }
        }
        Ok(())
    }
}

/// One line of a measurement plan: a blocking request as `wire` writes
/// it, a nonblocking one behind its call's name.
fn encode_line(call: Call, r: &Request) -> String {
    match call {
        Call::Bcast => encode(r),
        _ => format!("{call}\t{}", encode(r)),
    }
}

fn decode_line(line: &str) -> Result<(Call, Request), TuneError> {
    match line.split_once('\t') {
        Some((head, rest)) => match head.parse::<Call>() {
            Ok(call) if call.is_nonblocking() => Ok((call, decode(rest)?)),
            _ => Ok((Call::Bcast, decode(line)?)),
        },
        None => Ok((Call::Bcast, decode(line)?)),
    }
}

impl Oracle for MpiOracle<'_> {
    fn measure(&mut self, reqs: &[Request]) -> Result<Vec<Vec<f64>>, TuneError> {
        self.measure_calls(Call::Bcast, reqs)
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
