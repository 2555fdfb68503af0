//! Network models: LogGP parameters for links inside a node and between
//! nodes, with the per-node network link shared by a node's messages.
//! Read from YAML; every figure in microseconds and GB/s.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// LogGP parameters of one kind of link.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Link {
    /// L: wire latency, microseconds.
    pub latency_us: f64,
    /// o: CPU overhead per message at each end, microseconds.
    pub overhead_us: f64,
    /// g: least time between two messages injected by one port, microseconds.
    pub gap_us: f64,
    /// 1/G: bandwidth, GB/s (10^9 bytes per second).
    pub bandwidth_gbs: f64,
    /// Messages up to this many bytes are sent eagerly; larger ones wait for
    /// their receive (a rendezvous costing one extra latency). Open MPI's
    /// defaults: 4 KiB over shared memory (vader), 64 KiB over TCP.
    pub eager_limit: u64,
    /// Bandwidth of eager messages, GB/s, where it differs from
    /// `bandwidth_gbs` (which then prices rendezvous messages only): the two
    /// protocols move bytes differently (copies through bounce buffers
    /// against zero-copy), as LogGPS models them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eager_bandwidth_gbs: Option<f64>,
    /// A shaped link (a token bucket: cloud instances' network limits, Linux
    /// `tc`): after an idle spell, up to this many bytes leave at once and
    /// only the rest pays the per-byte cost; the bucket refills at
    /// `bandwidth_gbs`. Between nodes only (each port has its bucket).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_bytes: Option<u64>,
    /// A rendezvous message carries this many bytes with its request, and
    /// the rest once the receiver has answered (Open MPI's ob1: a first
    /// fragment of the transport's eager limit less its header). None: all
    /// of it after the answer. The first fragment takes its turn on the
    /// links when sent, the rest when answered, behind what was queued
    /// meanwhile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rendezvous_first_bytes: Option<u64>,
}

impl Link {
    /// Microseconds per byte (of a rendezvous message, or of every message
    /// when no eager bandwidth is given).
    pub fn per_byte(&self) -> f64 {
        1e-3 / self.bandwidth_gbs
    }

    /// Microseconds per byte of a message of `bytes`.
    #[inline]
    pub fn per_byte_for(&self, bytes: u64) -> f64 {
        match self.eager_bandwidth_gbs {
            Some(e) if bytes <= self.eager_limit => 1e-3 / e,
            _ => 1e-3 / self.bandwidth_gbs,
        }
    }
}

/// A machine: links inside and between nodes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Model {
    pub name: String,
    /// Where the figures come from (a publication, a calibration run).
    pub source: String,
    /// Between ranks of one node (shared memory).
    pub intra: Link,
    /// Between nodes; every node has one such link per direction, shared by
    /// all its ranks' messages (contention).
    pub inter: Link,
    /// Local memory copy bandwidth, GB/s.
    pub copy_gbs: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("{path}: cannot read: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}{}: {why}; see tuning-tables/models/README.md for the fields", .line.map(|l| format!(":{l}")).unwrap_or_default())]
    Bad {
        path: String,
        line: Option<usize>,
        why: String,
    },
}

impl Model {
    pub fn load(path: &Path) -> Result<Model, ModelError> {
        let p = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ModelError::Read {
            path: p.clone(),
            source,
        })?;
        let m: Model = serde_yaml::from_str(&text).map_err(|e| ModelError::Bad {
            path: p.clone(),
            line: e.location().map(|l| l.line()),
            why: e.to_string(),
        })?;
        m.check().map_err(|why| ModelError::Bad {
            path: p,
            line: None,
            why,
        })?;
        Ok(m)
    }

    /// Every figure positive and finite.
    pub fn check(&self) -> Result<(), String> {
        for (what, l) in [("intra", &self.intra), ("inter", &self.inter)] {
            for (f, v) in [
                ("latency_us", l.latency_us),
                ("overhead_us", l.overhead_us),
                ("gap_us", l.gap_us),
            ] {
                if !(v.is_finite() && v >= 0.0) {
                    return Err(format!("{what}.{f} = {v}: must be a number >= 0"));
                }
            }
            if !(l.bandwidth_gbs.is_finite() && l.bandwidth_gbs > 0.0) {
                return Err(format!(
                    "{what}.bandwidth_gbs = {}: must be > 0",
                    l.bandwidth_gbs
                ));
            }
            if let Some(e) = l.eager_bandwidth_gbs {
                if !(e.is_finite() && e > 0.0) {
                    return Err(format!("{what}.eager_bandwidth_gbs = {e}: must be > 0"));
                }
            }
        }
        if self.intra.burst_bytes.is_some() {
            return Err(
                "intra.burst_bytes: only links between nodes (inter) are token buckets".into(),
            );
        }
        if !(self.copy_gbs.is_finite() && self.copy_gbs > 0.0) {
            return Err(format!("copy_gbs = {}: must be > 0", self.copy_gbs));
        }
        Ok(())
    }

    pub fn to_yaml(&self) -> String {
        serde_yaml::to_string(self).expect("model serialises")
    }
}
