//! Resuming a tune: the settings a raw CSV was produced with (kept beside
//! it, a resume must match them) and reading a CSV that a kill may have cut
//! off mid-line.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::TuneError;
use crate::measure::record::{self, Sample};

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
    /// How repetitions start (`barrier` or `window`); CSVs from before this
    /// field were all measured after a barrier.
    #[serde(default = "barrier")]
    pub sync: String,
    /// The call pattern (`synchronized` or `back-to-back`); CSVs from
    /// before this field were all `synchronized`.
    #[serde(default = "synchronized")]
    pub pattern: String,
}

fn synchronized() -> String {
    "synchronized".into()
}

fn barrier() -> String {
    "barrier".into()
}

impl TuneConfig {
    pub fn sidecar(csv: &Path) -> PathBuf {
        Self::beside(csv, ".tune.yaml")
    }

    /// The marker a sweep that stopped early (budget or SIGTERM) leaves
    /// beside its CSV, and removes once it is finished: batch jobs check it
    /// to decide whether to run again, `table build` to name the launch.
    pub fn incomplete_marker(csv: &Path) -> PathBuf {
        Self::beside(csv, ".incomplete")
    }

    fn beside(csv: &Path, suffix: &str) -> PathBuf {
        let mut p = csv.as_os_str().to_owned();
        p.push(suffix);
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
/// (ranks, ppn, nodes, collective, spec, execution, bytes, run, call).
pub type Key = (u32, u32, u32, String, String, String, u64, u32, String);

pub fn key_of(s: &Sample) -> Key {
    (
        s.ranks,
        s.ppn,
        s.nodes,
        s.collective.clone(),
        s.spec.clone(),
        s.execution.clone(),
        s.bytes,
        s.run,
        s.call.clone(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::record::Writer;

    #[test]
    fn resume_drops_a_cut_last_line() {
        let dir = std::env::temp_dir().join(format!("colltune-resume-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("raw.csv");
        let mut a = crate::measure::record::sample("linear", "blocking", 8, 1, 1.0);
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
            sync: "barrier".into(),
            pattern: "synchronized".into(),
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
