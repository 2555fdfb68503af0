//! The tuning space: which (algorithm, parameters, execution) candidates the
//! tuner compares, and the segment sizes an exhaustive sweep tries.

use std::fmt;

use colltune_algorithms::{resolve, AlgoSpec, Collective, Execution, ParamValue};

/// One thing the tuner can choose.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Candidate {
    pub collective: Collective,
    /// Resolved (canonical) specification.
    pub spec: AlgoSpec,
    pub exec: Execution,
}

impl Candidate {
    pub fn new(collective: Collective, text: &str, exec: Execution) -> Candidate {
        let spec = resolve(
            collective,
            &AlgoSpec::parse(text).expect("valid built-in spec"),
        )
        .expect("built-in spec resolves");
        Candidate {
            collective,
            spec,
            exec,
        }
    }

    /// The segment size, if the algorithm is segmented.
    pub fn segment(&self) -> Option<u64> {
        self.spec.int("segment").ok()
    }

    /// The same candidate with another segment size.
    pub fn with_segment(&self, segment: u64) -> Candidate {
        let mut c = self.clone();
        c.spec
            .params
            .insert("segment".into(), ParamValue::Int(segment));
        c
    }

    /// The candidate with its segment reset to 0: the family a segment sweep varies.
    pub fn family(&self) -> Candidate {
        match self.segment() {
            Some(_) => self.with_segment(0),
            None => self.clone(),
        }
    }

    pub fn label(&self) -> String {
        format!("{} [{}]", self.spec, self.exec)
    }
}

impl fmt::Display for Candidate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.collective, self.label())
    }
}

/// What shapes the space.
#[derive(Clone, Debug)]
pub struct SpaceOptions {
    pub executions: Vec<Execution>,
    /// Swap pairing (the call's semantics, not a choice).
    pub pairing: String,
    /// The communicator spans several nodes (node-aware algorithms apply).
    pub multi_node: bool,
}

/// Every candidate for a collective, segmented ones unsegmented (the tuner
/// then tunes their segment size).
pub fn candidates(c: Collective, o: &SpaceOptions) -> Vec<Candidate> {
    let specs: Vec<String> = match c {
        Collective::Bcast => {
            let mut v: Vec<String> = [
                "linear",
                "binomial:segment=0",
                "knomial:radix=3,segment=0",
                "knomial:radix=4,segment=0",
                "knomial:radix=8,segment=0",
                "binary:segment=0",
                "split_binary:segment=0",
                "chain:fanout=2,segment=0",
                "chain:fanout=4,segment=0",
                "pipeline:segment=0",
                "scatter_allgather",
                "scatter_allgather_ring",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            if o.multi_node {
                for inter in ["binomial", "linear", "pipeline", "scatter_allgather_ring"] {
                    for intra in ["linear", "binomial", "knomial(radix=4)"] {
                        v.push(format!("hierarchical:inter={inter},intra={intra}"));
                    }
                }
            }
            v
        }
        Collective::Swap => [
            "ordered",
            "sendrecv",
            "isend_recv",
            "irecv_send",
            "isend_irecv",
            "rsend",
            "put_fence",
            "put_pscw",
        ]
        .iter()
        .map(|s| format!("{s}:pairing={}", o.pairing))
        .collect(),
    };
    let mut out = Vec::new();
    for s in specs {
        for &e in &o.executions {
            out.push(Candidate::new(c, &s, e));
        }
    }
    out
}

/// Smallest segment the tuner tries.
pub const SEGMENT_MIN: u64 = 4096;
/// Largest segment the tuner tries.
pub const SEGMENT_MAX: u64 = 1 << 20;

/// Segment sizes worth trying at `bytes`: powers of two from 4 KiB up to
/// half the message (at least two segments) and 1 MiB. Empty when the
/// message is too small to split.
pub fn segment_grid(bytes: u64) -> Vec<u64> {
    let top = (bytes / 2).min(SEGMENT_MAX);
    let mut v = Vec::new();
    let mut s = SEGMENT_MIN;
    while s <= top {
        v.push(s);
        s *= 2;
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spaces() {
        let o = SpaceOptions {
            executions: Execution::ALL.to_vec(),
            pairing: "neighbors".into(),
            multi_node: false,
        };
        let b = candidates(Collective::Bcast, &o);
        assert_eq!(b.len(), 24);
        assert!(b.iter().all(|c| c.spec.name != "hierarchical"));
        let multi = candidates(
            Collective::Bcast,
            &SpaceOptions {
                multi_node: true,
                ..o.clone()
            },
        );
        assert_eq!(multi.len(), 24 + 24);
        assert_eq!(candidates(Collective::Swap, &o).len(), 16);
        let p = Candidate::new(Collective::Bcast, "pipeline", Execution::Blocking);
        assert_eq!(p.segment(), Some(65536));
        assert_eq!(
            p.with_segment(8192).label(),
            "pipeline:segment=8192 [blocking]"
        );
        assert_eq!(p.family().segment(), Some(0));
        assert!(segment_grid(4096).is_empty());
        assert_eq!(segment_grid(32768), vec![4096, 8192, 16384]);
        assert_eq!(*segment_grid(1 << 30).last().unwrap(), 1 << 20);
    }
}
