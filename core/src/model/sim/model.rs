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
    /// g: least time between two messages one port sends, or receives
    /// (between nodes: the node's port, shared by its ranks), microseconds.
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

    /// A message's fixed cost, microseconds: `2o + L`, one `L` more above
    /// the eager limit (rendezvous).
    pub fn alpha(&self, bytes: u64) -> f64 {
        2.0 * self.overhead_us + self.latency_us * if bytes > self.eager_limit { 2.0 } else { 1.0 }
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
    /// Closer links inside a node, finest first (a shared cache, a NUMA
    /// domain, a socket): two ranks of one node that share the first
    /// level's group talk over its link; ranks sharing none of them over
    /// `intra`. Used where the call says where each rank sits (a layout
    /// and a mapping: `predict`); without placement every pair of one
    /// node uses `intra`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub levels: Vec<LevelLink>,
    /// What all shared-memory copies into one memory domain together can
    /// move, GB/s: a socket's where the call says where ranks sit (a
    /// layout), else a node's. Many concurrent copies are slower each than
    /// one alone. None: no limit beyond each process copying one message
    /// at a time.
    pub memory_copy_gbs: Option<f64>,
    /// How much a message inside a node costs more for each rank of the
    /// node in the call beyond two, as a fraction of what two ranks alone
    /// pay (its links' latency and overhead): a node's ranks busy in one
    /// call load its caches' coherence traffic, which a two-rank ping-pong
    /// does not show. None: no such term (a model calibrated by colltune's
    /// own ping-pong, or written before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intra_load_per_rank: Option<f64>,
    /// Whether the rendezvous reads of one sender's buffer inside a node in
    /// progress at once share its rate (`sim/share.rs`: k reads started
    /// together each end k reads later) rather than queue on it (one read
    /// apart). False: they queue (the default: the shared form fits basic
    /// linear inside a socket, but costs calibrated agreement elsewhere,
    /// docs/measurements/2026-12-07-calibrate/).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shared_reads: bool,
    /// Whether the rendezvous transfers leaving one node's network port at
    /// once share its rate (`sim/share.rs`: k started together each end k
    /// transfers later) rather than queue on it. `calibrate --collectives`
    /// keeps it where the fit's error falls with it (a rank sending to
    /// several nodes at once, as a binomial root does: on Leonardo 8 MiB from
    /// 256 nodes measures 36 transfers' time, the path through each
    /// rank's first child, which the queue gives as 8).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shared_ports: bool,
    /// A level above the node: groups of nodes (a dragonfly's groups, a
    /// fat tree's leaf switches) and the link between nodes of different
    /// groups. None: one group, every pair of nodes talks over `inter`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<GroupLevel>,
    /// How far the model's times were from the measurements it was fitted
    /// to: the median relative error (`calibrate --collectives`: over the
    /// collectives; `--p2p`: the ping-pong's). `predict` calls a point
    /// uncertain where the runner-up is within it. None: not known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fit_error: Option<f64>,
}

/// Groups of nodes above the node level, and what a message between two
/// groups costs.
///
/// ```text
///   group 0                      group 1
///   [node 0][node 1] ... ====== [node n][node n+1] ...
///     inter (same group)   link (between groups)
/// ```
///
/// Nodes are grouped in the order they are numbered, `nodes` to a group
/// (`--layout group:8,node:32,core:4` gives the grouping itself, where a
/// command takes one). A node's port is still one resource per direction,
/// shared by its messages whichever group they go to; with `global_gbs`
/// a group's global links are one more, shared by all its nodes' messages
/// to other groups.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupLevel {
    /// Nodes per group (the last group may hold fewer).
    pub nodes: usize,
    /// Between nodes of different groups (the more hops of a global
    /// link): its latency, overheads, bandwidth and eager limit.
    pub link: Link,
    /// All of one group's links to the other groups together, GB/s each
    /// way: messages between groups take turns on their groups' global
    /// links (contention). Absent: not a shared resource (each node's port
    /// is the only one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub global_gbs: Option<f64>,
}

/// One level of distance inside a node and its link.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LevelLink {
    /// What the two ranks share: `cache`, `numa` or `socket`.
    pub shares: String,
    pub link: Link,
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
        let named = [("intra", &self.intra), ("inter", &self.inter)];
        let levels = self.levels.iter().map(|l| (l.shares.as_str(), &l.link));
        let group = self.group.iter().map(|g| ("group.link", &g.link));
        for (what, l) in named.into_iter().chain(levels).chain(group) {
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
        if self
            .group
            .as_ref()
            .is_some_and(|g| g.link.burst_bytes.is_some())
        {
            return Err(
                "group.link.burst_bytes: a node's port is one token bucket whichever \
                 group a message goes to; give burst_bytes on inter only"
                    .into(),
            );
        }
        if self.intra.burst_bytes.is_some()
            || self.levels.iter().any(|l| l.link.burst_bytes.is_some())
        {
            return Err(
                "intra.burst_bytes: only links between nodes (inter) are token buckets".into(),
            );
        }
        if let Some(b) = self.memory_copy_gbs {
            if !(b.is_finite() && b > 0.0) {
                return Err(format!("memory_copy_gbs = {b}: must be > 0"));
            }
        }
        if let Some(k) = self.intra_load_per_rank {
            if !(k.is_finite() && k >= 0.0) {
                return Err(format!("intra_load_per_rank = {k}: must be a number >= 0"));
            }
        }
        if self.group.as_ref().is_some_and(|g| g.nodes == 0) {
            return Err(
                "group.nodes = 0: write how many nodes one group holds (a whole number >= 1), \
                 or leave `group` out for a machine of one group"
                    .into(),
            );
        }
        if let Some(b) = self.group.as_ref().and_then(|g| g.global_gbs) {
            if !(b.is_finite() && b > 0.0) {
                return Err(format!(
                    "group.global_gbs = {b}: must be > 0 (all of a group's links to the others, GB/s), or leave it out: not shared"
                ));
            }
        }
        if !(self.copy_gbs.is_finite() && self.copy_gbs > 0.0) {
            return Err(format!("copy_gbs = {}: must be > 0", self.copy_gbs));
        }
        Ok(())
    }

    /// The group of each of `nodes` nodes numbered in order (all in group
    /// 0 without a group level).
    /// The link a message at `tier` takes.
    pub fn link_at(&self, tier: super::traffic::Tier) -> &Link {
        use super::traffic::Tier;
        match tier {
            Tier::Node => &self.intra,
            Tier::Group => &self.inter,
            Tier::Global => self.group.as_ref().map_or(&self.inter, |g| &g.link),
        }
    }

    pub fn node_groups(&self, nodes: usize) -> Vec<u32> {
        let per = self.group.as_ref().map_or(usize::MAX, |g| g.nodes.max(1));
        (0..nodes).map(|n| (n / per) as u32).collect()
    }

    pub fn to_yaml(&self) -> String {
        serde_yaml::to_string(self).expect("model serialises")
    }
}

#[cfg(test)]
mod tests {
    use super::Model;
    use std::path::Path;

    #[test]
    fn the_dragonfly_model_has_a_group_level() {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tuning-tables/models/leonardo-dragonfly.yaml");
        let m = Model::load(&p).unwrap();
        let g = m.group.as_ref().expect("a group level");
        assert_eq!(g.nodes, 180);
        assert!(g.link.latency_us > m.inter.latency_us);
        assert_eq!(m.node_groups(361), {
            let mut v = vec![0; 180];
            v.extend([1; 180]);
            v.push(2);
            v
        });
        // It survives a round trip; a model without one has one group.
        let back: Model = serde_yaml::from_str(&m.to_yaml()).unwrap();
        assert_eq!(back, m);
        let mut flat = m.clone();
        flat.group = None;
        assert!(!flat.to_yaml().contains("\ngroup:"));
        assert_eq!(flat.node_groups(3), vec![0, 0, 0]);
    }

    #[test]
    fn a_bad_group_level_names_the_file_the_field_and_the_fix() {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tuning-tables/models/leonardo-dragonfly.yaml");
        let good = std::fs::read_to_string(&p).unwrap();
        let dir = std::env::temp_dir().join(format!("colltune-group-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cases = [
            (
                "  nodes: 180",
                "  nodes: 0",
                "group.nodes = 0",
                "how many nodes",
            ),
            ("  nodes: 180", "  nodes: -3", "nodes", "line"),
            ("  nodes: 180", "  nodez: 180", "nodez", "unknown field"),
            (
                "    bandwidth_gbs: 24.0\n    eager_limit: 32768\ncopy",
                "    bandwidth_gbs: 0\n    eager_limit: 32768\ncopy",
                "group.link.bandwidth_gbs = 0",
                "must be > 0",
            ),
            (
                "    eager_limit: 32768\ncopy",
                "    eager_limit: 32768\n    burst_bytes: 100\ncopy",
                "group.link.burst_bytes",
                "inter only",
            ),
        ];
        for (k, (from, to, field, what)) in cases.into_iter().enumerate() {
            assert!(good.contains(from), "{from}");
            let path = dir.join(format!("bad{k}.yaml"));
            std::fs::write(&path, good.replacen(from, to, 1)).unwrap();
            let e = Model::load(&path).unwrap_err().to_string();
            assert!(e.starts_with(&path.display().to_string()), "{e}");
            assert!(e.contains(field) && e.contains(what), "{e}");
            assert!(e.contains("tuning-tables/models/README.md"), "{e}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
