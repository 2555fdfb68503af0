//! The tuner on MPI: rank 0 runs the search and broadcasts each batch of
//! measurements to every rank; all ranks of the communicator concerned
//! measure it together; rank 0 streams the samples to the raw CSV as they
//! are taken. Resuming replays the search with the CSV's samples as a cache,
//! so no completed point is measured twice.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use colltune_algorithms::{AlgoSpec, Collective, Execution};
use serde::{Deserialize, Serialize};

use super::{Candidate, Oracle, Request, TuneError};
use crate::bench::{Measurer, Method, Point, Provenance, Subject};
use crate::progress::Progress;
use crate::record::{self, Sample, Writer};
use crate::transport::mpi::{ffi, Comm};

/// The settings a raw CSV was produced with, kept beside it
/// (`RAW.csv.tune.yaml`); a resume must match them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TuneConfig {
    pub colltune: String,
    pub mpi: String,
    pub world_ranks: u32,
    pub comm_sizes: Vec<u32>,
    pub collectives: Vec<String>,
    pub sizes: Vec<u64>,
    pub executions: Vec<String>,
    pub pairing: String,
    pub mode: String,
    pub screen_runs: u32,
    pub full_runs: u32,
    pub screen_scale: f64,
    pub margin: f64,
    pub stride: u32,
    pub budget_ms: u64,
    pub min_reps: u32,
    pub max_reps: u32,
    pub cache: String,
    pub root: String,
}

impl TuneConfig {
    pub fn sidecar(csv: &Path) -> PathBuf {
        let mut p = csv.as_os_str().to_owned();
        p.push(".tune.yaml");
        PathBuf::from(p)
    }

    /// Fields that differ from `other`, as `name: ours vs theirs`.
    pub fn differences(&self, other: &TuneConfig) -> Vec<String> {
        let a = serde_yaml::to_value(self).unwrap_or_default();
        let b = serde_yaml::to_value(other).unwrap_or_default();
        let (Some(a), Some(b)) = (a.as_mapping(), b.as_mapping()) else {
            return vec!["unreadable configuration".into()];
        };
        a.iter()
            .filter(|(k, v)| b.get(*k) != Some(*v))
            .map(|(k, v)| {
                let show = |x: Option<&serde_yaml::Value>| {
                    x.map(|x| {
                        serde_yaml::to_string(x)
                            .unwrap_or_default()
                            .trim()
                            .replace('\n', " ")
                    })
                    .unwrap_or_else(|| "absent".into())
                };
                format!(
                    "{}: {} now vs {} in the CSV's run",
                    k.as_str().unwrap_or("?"),
                    show(Some(v)),
                    show(b.get(k))
                )
            })
            .collect()
    }
}

/// Identifies a completed point-run in the CSV.
type Key = (u32, u32, u32, String, String, String, u64, u32);

fn key_of(s: &Sample) -> Key {
    (
        s.ranks,
        s.ppn,
        s.nodes,
        s.collective.clone(),
        s.spec.clone(),
        s.execution.clone(),
        s.bytes,
        s.run,
    )
}

/// Reads a raw CSV to resume from. A last line cut off by a kill is
/// dropped with the rest of its point-run, which is then measured again.
pub fn read_for_resume(path: &Path) -> Result<Vec<Sample>, TuneError> {
    let text = std::fs::read(path).map_err(|source| record::RecordError::Open {
        path: path.into(),
        source,
    })?;
    let cut = !text.is_empty() && !text.ends_with(b"\n");
    if cut {
        let keep = text
            .iter()
            .rposition(|&b| b == b'\n')
            .map(|i| i + 1)
            .unwrap_or(0);
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|source| record::RecordError::Open {
                path: path.into(),
                source,
            })?;
        f.set_len(keep as u64)
            .map_err(|source| record::RecordError::Write {
                path: path.into(),
                source,
            })?;
    }
    let mut samples = match record::read(path) {
        Ok(s) => s,
        Err(record::RecordError::Empty { .. }) => Vec::new(),
        Err(e) => return Err(e.into()),
    };
    if cut {
        if let Some(last) = samples.last().map(key_of) {
            samples.retain(|s| key_of(s) != last);
        }
    }
    Ok(samples)
}

/// One line of a broadcast plan.
fn encode(r: &Request) -> String {
    format!(
        "{}\t{}\t{}\t{}\t{}\t{}\t{}",
        r.comm, r.cand.collective, r.cand.spec, r.cand.exec, r.bytes, r.run, r.budget_scale
    )
}

fn decode(line: &str) -> Result<Request, TuneError> {
    let bad = || TuneError::Other(format!("malformed measurement plan line `{line}`"));
    let f: Vec<&str> = line.split('\t').collect();
    if f.len() != 7 {
        return Err(bad());
    }
    let collective: Collective = f[1].parse().map_err(|_| bad())?;
    let exec: Execution = f[3].parse().map_err(|_| bad())?;
    Ok(Request {
        comm: f[0].parse().map_err(|_| bad())?,
        cand: Candidate {
            collective,
            spec: AlgoSpec::parse(f[2])
                .ok()
                .and_then(|s| colltune_algorithms::resolve(collective, &s).ok())
                .ok_or_else(bad)?,
            exec,
        },
        bytes: f[4].parse().map_err(|_| bad())?,
        run: f[5].parse().map_err(|_| bad())?,
        budget_scale: f[6].parse().map_err(|_| bad())?,
    })
}

/// Rank 0's side (the oracle) and every rank's measuring loop.
pub struct MpiOracle<'c> {
    comms: &'c [Option<Comm>],
    method: Method,
    prov: Provenance,
    measurers: Vec<Option<Measurer<'c>>>,
    cache: HashMap<Key, Vec<Sample>>,
    writer: Option<Writer>,
    pub progress: Progress,
    /// Every sample of this tune (resumed and new), on rank 0.
    pub samples: Vec<Sample>,
    pub measured: u64,
    pub reused: u64,
    /// Candidates that cannot run here (every rank learns it alike).
    pub unavailable: Vec<(String, String)>,
    stop: Arc<AtomicBool>,
}

impl<'c> MpiOracle<'c> {
    pub fn new(
        comms: &'c [Option<Comm>],
        method: Method,
        prov: Provenance,
        resumed: Vec<Sample>,
        writer: Option<Writer>,
        progress: Progress,
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
            unavailable: Vec::new(),
            stop,
        }
    }

    fn world(&self) -> ffi::MPI_Comm {
        self.comms[0]
            .as_ref()
            .expect("every rank is in the world")
            .raw()
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
            r.cand.exec.to_string(),
            r.bytes,
            r.run,
        ))
    }

    /// Measures one request on the ranks of its communicator; nothing for
    /// a candidate that cannot run here.
    fn measure_one(&mut self, r: &Request) -> Result<Vec<Sample>, TuneError> {
        let label = r.cand.label();
        if self.unavailable.iter().any(|(l, _)| *l == label) {
            return Ok(Vec::new());
        }
        let Some(Some(m)) = self.measurers.get_mut(r.comm) else {
            return Ok(Vec::new());
        };
        m.method.budget =
            Duration::from_secs_f64(self.method.budget.as_secs_f64() * r.budget_scale);
        let subject = Subject::Ours {
            collective: r.cand.collective,
            spec: r.cand.spec.clone(),
            exec: r.cand.exec,
        };
        let pt = Point {
            subject: &subject,
            bytes: r.bytes,
            iterations: 1,
            overlap_us: 0.0,
        };
        match m.measure(&pt, r.run) {
            Ok(s) => Ok(s),
            Err(e) if e.is_unavailable() => {
                self.progress
                    .println(&format!("colltune tune: excluding {label}: {e}"));
                self.unavailable.push((label, e.to_string()));
                Ok(Vec::new())
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Every rank but 0: measure each broadcast plan until an empty one.
    pub fn serve(&mut self) -> Result<(), TuneError> {
        loop {
            let plan = ffi::bcast_bytes(&[], 0, self.world())?;
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
        ffi::bcast_bytes(&[], 0, self.world())?;
        self.progress.finish();
        Ok(())
    }

    pub fn provenance(&self) -> &Provenance {
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
            ffi::bcast_bytes(plan.as_bytes(), 0, self.world())?;
            for r in todo {
                self.progress
                    .set_message(format!("{} {} B run {}", r.cand, r.bytes, r.run));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_round_trip() {
        let r = Request {
            comm: 1,
            cand: Candidate::new(
                Collective::Bcast,
                "hierarchical:inter=pipeline(segment=8192),intra=linear",
                Execution::Nonblocking,
            ),
            bytes: 4096,
            run: 3,
            budget_scale: 0.25,
        };
        assert_eq!(decode(&encode(&r)).unwrap(), r);
        assert!(decode("1\tbcast").is_err());
    }

    #[test]
    fn resume_drops_a_cut_last_line() {
        let dir = std::env::temp_dir().join(format!("colltune-resume-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("raw.csv");
        let mut a = crate::record::sample("linear", "blocking", 8, 1, 1.0);
        let mut w = Writer::open(&p, false).unwrap();
        w.write(&[a.clone()]).unwrap();
        a.bytes = 16;
        w.write(&[a.clone(), a.clone()]).unwrap();
        drop(w);
        let mut text = std::fs::read_to_string(&p).unwrap();
        text.truncate(text.len() - 5);
        std::fs::write(&p, &text).unwrap();
        let got = read_for_resume(&p).unwrap();
        assert_eq!(got.len(), 1, "the cut point-run is dropped whole");
        assert_eq!(got[0].bytes, 8);
        assert!(std::fs::read_to_string(&p).unwrap().ends_with('\n'));
    }

    #[test]
    fn config_differences_are_named() {
        let a = TuneConfig {
            colltune: "0.1.0".into(),
            mpi: "Open MPI v4.1.4".into(),
            world_ranks: 4,
            comm_sizes: vec![4],
            collectives: vec!["bcast".into()],
            sizes: vec![1, 2],
            executions: vec!["blocking".into()],
            pairing: "neighbors".into(),
            mode: "adaptive".into(),
            screen_runs: 2,
            full_runs: 2,
            screen_scale: 0.25,
            margin: 0.05,
            stride: 4,
            budget_ms: 50,
            min_reps: 5,
            max_reps: 300,
            cache: "warm".into(),
            root: "rotate".into(),
        };
        let mut b = a.clone();
        b.world_ranks = 8;
        b.sizes = vec![1];
        let d = a.differences(&b);
        assert_eq!(d.len(), 2, "{d:?}");
        assert!(d[0].starts_with("world_ranks: 4 now vs 8"), "{d:?}");
        assert!(a.differences(&a).is_empty());
    }
}
