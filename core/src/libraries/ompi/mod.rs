//! Open MPI's coll/tuned broadcast algorithms: their numeric ids (as
//! `coll_tuned_bcast_algorithm` and the dynamic rules file use them), their
//! names, and colltune's equivalent. Used to force them as benchmark
//! baselines, as table choices ([`Forced`]: `algorithm: ompi_tuned`) and to
//! export tables to Open MPI's formats.

use colltune_algorithms::{resolve, AlgoSpec, Collective, Execution, ParamValue};

/// One coll/tuned broadcast algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TunedBcast {
    pub id: u32,
    pub name: &'static str,
    /// colltune's algorithm with the same schedule shape.
    pub ours: &'static str,
    /// Whether Open MPI segments it (`coll_tuned_bcast_algorithm_segmentsize`).
    pub segmented: bool,
}

/// Open MPI 4.1's broadcast algorithms (`ompi_info --param coll tuned --level 9`).
pub const TUNED_BCAST: &[TunedBcast] = &[
    TunedBcast {
        id: 1,
        name: "basic_linear",
        ours: "linear",
        segmented: false,
    },
    TunedBcast {
        id: 2,
        name: "chain",
        ours: "chain",
        segmented: true,
    },
    TunedBcast {
        id: 3,
        name: "pipeline",
        ours: "pipeline",
        segmented: true,
    },
    TunedBcast {
        id: 4,
        name: "split_binary_tree",
        ours: "split_binary",
        segmented: true,
    },
    TunedBcast {
        id: 5,
        name: "binary_tree",
        ours: "binary",
        segmented: true,
    },
    TunedBcast {
        id: 6,
        name: "binomial",
        ours: "binomial",
        segmented: true,
    },
    TunedBcast {
        id: 7,
        name: "knomial",
        ours: "knomial",
        segmented: true,
    },
    TunedBcast {
        id: 8,
        name: "scatter_allgather",
        ours: "scatter_allgather",
        segmented: false,
    },
    TunedBcast {
        id: 9,
        name: "scatter_allgather_ring",
        ours: "scatter_allgather_ring",
        segmented: false,
    },
];

/// coll/tuned's algorithm 0: nothing forced, Open MPI's own decision (its
/// fixed rules; `coll_tuned_bcast_algorithm=0`, "ignore"). As a table
/// choice it is the library's default `MPI_Bcast`, so a tune can keep the
/// library's decision where nothing beats it. MPICH has no such thing:
/// exports to MPICH put the nearest of ours (`ours`) in its place, with a
/// note.
pub const TUNED_DEFAULT: TunedBcast = TunedBcast {
    id: 0,
    name: "default",
    ours: "binomial",
    segmented: false,
};

/// An algorithm by coll/tuned's id: 1-9, or 0 ([`TUNED_DEFAULT`]).
pub fn tuned_by_id(id: u32) -> Option<&'static TunedBcast> {
    if id == 0 {
        return Some(&TUNED_DEFAULT);
    }
    TUNED_BCAST.iter().find(|t| t.id == id)
}

/// Open MPI 4.1's fixed decision for broadcast (coll/tuned algorithm 0,
/// `ompi_coll_tuned_bcast_intra_dec_fixed` in 4.1.x's
/// coll_tuned_decision_fixed.c): the algorithm it runs for a communicator
/// of `ranks` and a message of `bytes`. It calls the algorithm with segment
/// size 0 and chain fanout 0 (so its chain is one chain: a pipeline, as
/// coll_base_topo's build_chain makes a fanout below 1 one) and k-nomial
/// radix 4. Written from the thresholds, not the code.
pub fn tuned_bcast_decision(ranks: usize, bytes: u64) -> u32 {
    let (steps, last) = tuned_bcast_steps(ranks);
    steps
        .iter()
        .find(|(below, _)| bytes < *below)
        .map_or(last, |s| s.1)
}

/// [`tuned_bcast_decision`] for a communicator of `ranks` as byte ranges
/// (inclusive, ascending, covering every size): `(lo, hi, algorithm)`.
pub fn tuned_bcast_decision_ranges(ranks: usize) -> Vec<(u64, u64, u32)> {
    let (steps, last) = tuned_bcast_steps(ranks);
    let mut out: Vec<(u64, u64, u32)> = Vec::new();
    let mut lo = 0u64;
    for &(below, alg) in steps {
        if below > lo {
            out.push((lo, below - 1, alg));
            lo = below;
        }
    }
    out.push((lo, u64::MAX, last));
    // Neighbours of one algorithm are one range.
    out.dedup_by(|next, prev| {
        let same = next.2 == prev.2;
        if same {
            prev.1 = next.1;
        }
        same
    });
    out
}

/// The thresholds of [`tuned_bcast_decision`]: (upper bound on bytes,
/// algorithm), ascending, and the algorithm above the last bound.
fn tuned_bcast_steps(ranks: usize) -> (&'static [(u64, u32)], u32) {
    match ranks {
        0..=3 => (
            &[
                (32, 3),
                (256, 5),
                (512, 3),
                (1024, 7),
                (32768, 1),
                (131072, 5),
                (262144, 2),
                (524288, 1),
                (1048576, 6),
            ],
            5,
        ),
        4..=7 => (&[(64, 5), (128, 6), (2048, 5), (8192, 6), (1048576, 1)], 2),
        8..=15 => (&[(8, 7), (64, 5), (4096, 7), (16384, 5), (32768, 6)], 1),
        16..=31 => (&[(4096, 7), (1048576, 6)], 8),
        32..=63 => (&[(2048, 6)], 7),
        64..=127 => (&[], 7),
        128..=255 => (&[(2, 6), (16384, 5), (32768, 1), (65536, 5)], 7),
        256..=1023 => (&[(16384, 7), (32768, 4)], 7),
        1024..=2047 => (&[(524288, 7)], 8),
        2048..=4095 => (&[(262144, 7)], 8),
        _ => (&[(8192, 7), (16384, 5), (262144, 7)], 8),
    }
}

/// Whether an MPI library version string is Open MPI's.
pub fn is_open_mpi(library: &str) -> bool {
    library.contains("Open MPI")
}

/// The table name of a choice that runs one of Open MPI's own coll/tuned
/// broadcast algorithms (`algorithm: ompi_tuned`, execution `library`).
pub const TABLE_NAME: &str = "ompi_tuned";

/// The execution a library choice is written with in a table.
pub const LIBRARY_EXECUTION: &str = "library";

/// Segment sizes the tuner tries for Open MPI's segmented algorithms: 0 (no
/// segmentation: a tree over the whole message, what wins below a few KiB)
/// and one size from each regime of coll/tuned's own fixed decision for
/// broadcast (1 KiB for trees on small-to-medium messages, 8 KiB for
/// split-binary and binomial in the middle, 64 KiB for pipeline and chain on
/// large ones): the library's own picks are among the candidates, and four
/// sizes keep the tune's cost at 28 library candidates (with the default).
pub const TUNED_SEGMENTS: &[u32] = &[0, 1024, 8192, 65536];

/// One of Open MPI's coll/tuned broadcast algorithms, forced (through
/// `coll_tuned_bcast_algorithm` and `_segmentsize`) on a communicator of
/// its own: a table choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Forced {
    /// coll/tuned's algorithm id (1..=9).
    pub id: u32,
    /// Bytes per segment; 0: not segmented.
    pub segment: u32,
}

impl Forced {
    pub fn tuned(&self) -> &'static TunedBcast {
        tuned_by_id(self.id).expect("a Forced holds a known id")
    }

    /// Whether this is Open MPI's own decision (algorithm 0), not a forced
    /// algorithm.
    pub fn is_default(&self) -> bool {
        self.id == 0
    }

    /// Every candidate the tuner compares: the library's own decision
    /// (algorithm 0), then each algorithm once, the segmented ones at each
    /// of [`TUNED_SEGMENTS`].
    pub fn candidates() -> Vec<Forced> {
        let mut out = vec![Forced { id: 0, segment: 0 }];
        for t in TUNED_BCAST {
            let segs: &[u32] = if t.segmented { TUNED_SEGMENTS } else { &[0] };
            for &segment in segs {
                out.push(Forced { id: t.id, segment });
            }
        }
        out
    }

    /// Reads a table's `ompi_tuned` specification: `algorithm` (coll/tuned's
    /// id 1-9, or its name: `binomial`, `basic_linear`, ...; colltune's name
    /// of the same shape, `linear`, is accepted too), an optional `name`
    /// (which must agree) and `segment` (bytes, default 0). The error says
    /// what is wrong and what to write.
    pub fn from_spec(spec: &AlgoSpec) -> Result<Forced, String> {
        if spec.name != TABLE_NAME {
            return Err(format!("`{}` is not `{TABLE_NAME}`", spec.name));
        }
        let ids = || {
            std::iter::once(&TUNED_DEFAULT)
                .chain(TUNED_BCAST)
                .map(|t| format!("{} ({})", t.id, t.name))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let by_word = |w: &str| {
            TUNED_BCAST
                .iter()
                .find(|t| t.name == w || t.ours == w)
                .or((w == TUNED_DEFAULT.name).then_some(&TUNED_DEFAULT))
                .or_else(|| w.parse::<u32>().ok().and_then(tuned_by_id))
        };
        for k in spec.params.keys() {
            if !["algorithm", "name", "segment"].contains(&k.as_str()) {
                return Err(format!(
                    "{TABLE_NAME} has no parameter `{k}`; it takes algorithm (1-9 or a name), segment (bytes, 0: none) and name"
                ));
            }
        }
        let from_algorithm = match spec.params.get("algorithm") {
            None => None,
            Some(ParamValue::Int(i)) => Some(
                u32::try_from(*i)
                    .ok()
                    .and_then(tuned_by_id)
                    .ok_or_else(|| {
                        format!("{TABLE_NAME}: unknown Open MPI broadcast algorithm {i}; coll/tuned has {}", ids())
                    })?,
            ),
            Some(ParamValue::Word(w)) => Some(by_word(w).ok_or_else(|| {
                format!("{TABLE_NAME}: unknown Open MPI broadcast algorithm `{w}`; coll/tuned has {}", ids())
            })?),
            Some(other) => {
                return Err(format!(
                    "{TABLE_NAME}: algorithm `{other}` is not an Open MPI algorithm id or name; coll/tuned has {}",
                    ids()
                ))
            }
        };
        let from_name = match spec.params.get("name") {
            None => None,
            Some(ParamValue::Word(w)) => Some(by_word(w).ok_or_else(|| {
                format!("{TABLE_NAME}: unknown Open MPI broadcast algorithm name `{w}`; coll/tuned has {}", ids())
            })?),
            Some(other) => Some(
                by_word(&other.to_string())
                    .ok_or_else(|| format!("{TABLE_NAME}: name `{other}` is not an Open MPI algorithm name"))?,
            ),
        };
        let tuned = match (from_algorithm, from_name) {
            (Some(a), Some(n)) if a.id != n.id => {
                return Err(format!(
                    "{TABLE_NAME}: algorithm {} is {}, but name says {}; make them agree (or drop name)",
                    a.id, a.name, n.name
                ))
            }
            (Some(t), _) | (None, Some(t)) => t,
            (None, None) => {
                return Err(format!(
                    "{TABLE_NAME} needs `algorithm`: one of {}",
                    ids()
                ))
            }
        };
        let segment = segment_param(TABLE_NAME, spec)?;
        if segment > 0 && !tuned.segmented {
            return Err(format!(
                "{TABLE_NAME}: Open MPI does not segment algorithm {} ({}); write segment: 0",
                tuned.id, tuned.name
            ));
        }
        Ok(Forced {
            id: tuned.id,
            segment,
        })
    }

    /// What coll/tuned runs when this algorithm is forced for `count`
    /// elements on `ranks` ranks: itself, except where Open MPI runs
    /// another. The scatter-allgathers (8, 9) need an element per rank;
    /// below that they call basic linear (1) (coll_base_bcast.c in Open MPI
    /// 4.1 and 5.0: "count ... switching to basic linear bcast"), so a
    /// table names basic linear there, and two tunes that measured the same
    /// code under two names do not write two rules.
    pub fn runs_as(&self, ranks: u32, count: u64) -> Forced {
        if matches!(self.id, 8 | 9) && count < u64::from(ranks) {
            Forced { id: 1, segment: 0 }
        } else {
            *self
        }
    }

    /// colltune's algorithm of the same family (its segment; Open MPI's
    /// default k-nomial radix 4), blocking: what runs in its place where
    /// the library's own cannot run alike on every rank. Binomial where
    /// the family takes no such parameters.
    pub fn twin(&self) -> (AlgoSpec, Execution) {
        let t = self.tuned();
        let mut spec = AlgoSpec::new(t.ours);
        if self.segment > 0 {
            spec = spec.with_int("segment", u64::from(self.segment));
        }
        if t.ours == "knomial" {
            spec = spec.with_int("radix", 4);
        }
        let spec = resolve(Collective::Bcast, &spec)
            .or_else(|_| resolve(Collective::Bcast, &AlgoSpec::new(t.ours)))
            .or_else(|_| resolve(Collective::Bcast, &AlgoSpec::new("binomial")))
            .expect("binomial resolves");
        (spec, Execution::Blocking)
    }

    /// The canonical specification, as tables, samples and labels write it:
    /// `ompi_tuned:algorithm=6,name=binomial,segment=0`.
    pub fn spec(&self) -> AlgoSpec {
        AlgoSpec::new(TABLE_NAME)
            .with_int("algorithm", u64::from(self.id))
            .with("name", ParamValue::Word(self.tuned().name.into()))
            .with_int("segment", u64::from(self.segment))
    }
}

/// A library choice's `segment` parameter (bytes, default 0): what Open MPI
/// takes (0 to 2^31 - 1); the error says what is wrong and what to write.
pub(crate) fn segment_param(family: &str, spec: &AlgoSpec) -> Result<u32, String> {
    match spec.params.get("segment") {
        None => Ok(0),
        Some(ParamValue::Int(s)) => u32::try_from(*s)
            .ok()
            .filter(|&s| s <= i32::MAX as u32)
            .ok_or_else(|| {
                format!("{family}: segment {s} is larger than Open MPI takes (2^31 - 1 bytes)")
            }),
        Some(other) => {
            let t = match other {
                ParamValue::Word(w) => w.clone(),
                o => o.to_string(),
            };
            Err(if t.trim_start().starts_with('-') {
                format!("{family}: segment {t} is negative; write 0 (no segmentation) or a size in bytes")
            } else {
                format!("{family}: segment `{t}` is not a size; write 0 (no segmentation) or bytes (65536 or 64K)")
            })
        }
    }
}

impl std::fmt::Display for Forced {
    /// `Open MPI's binomial (coll/tuned algorithm 6, segment 0)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_default() {
            return f.write_str("Open MPI's own decision (coll/tuned algorithm 0: nothing forced)");
        }
        write!(
            f,
            "Open MPI's {} (coll/tuned algorithm {}, segment {})",
            self.tuned().name,
            self.id,
            self.segment
        )
    }
}

pub mod adapt;
pub mod libnbc;

/// The Open MPI component a forced sample's spec names where it is not
/// coll/tuned: `adapt` for `ompi_adapt:...`, `han` for `ompi_han:...`.
pub fn component_of(spec: &str) -> Option<&'static str> {
    match spec.split(':').next() {
        Some(f) if f == adapt::TABLE_NAME => Some("adapt"),
        Some(f) if f == han::TABLE_NAME => Some("han"),
        _ => None,
    }
}

/// Open MPI's coll/han (hierarchical: an inter-node step over node leaders,
/// an intra-node step in each node) on one node: nothing to force. Open
/// MPI 5.0's `mca_coll_han_comm_query` disqualifies coll/han on any
/// communicator whose ranks all share one node ("comm has only local
/// processes; disqualifying myself", coll_han_module.c), whatever its
/// priority, so its broadcast choices never run there;
/// `jobs/check-ompi-forcing.sh` checks that it says so. On several nodes
/// coll/han is Open MPI 5.0's default (priority 35 over coll/tuned's 30),
/// and its choices are baselines ([`han`]).
pub const HAN_ONE_NODE: &str = "coll/han disqualifies itself on a communicator whose ranks share one node (Open MPI 5.0: \"comm has only local processes\"), so its broadcast choices cannot run here; on several nodes they are baselines (--baseline ompi-han)";

pub mod han;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fixed_decision_as_ranges_agrees_with_it_at_every_bound() {
        for ranks in 1..5000 {
            let r = tuned_bcast_decision_ranges(ranks);
            assert_eq!(r[0].0, 0);
            assert_eq!(r.last().unwrap().1, u64::MAX);
            for w in r.windows(2) {
                assert_eq!(w[0].1 + 1, w[1].0, "{ranks} ranks: contiguous");
                assert_ne!(w[0].2, w[1].2, "{ranks} ranks: neighbours merged");
            }
            for &(lo, hi, id) in &r {
                for b in [lo, hi, lo + (hi - lo) / 2] {
                    assert_eq!(tuned_bcast_decision(ranks, b), id, "{ranks} ranks, {b} B");
                }
            }
        }
    }

    #[test]
    fn han_choices_come_from_the_enumeration() {
        let items: Vec<(i32, String)> = [(0, "default"), (1, "intra"), (2, "simple")]
            .iter()
            .map(|(i, n)| (*i, n.to_string()))
            .collect();
        let all = han::from_items(&items).unwrap();
        let forced = han::baselines(&all);
        assert_eq!(
            forced.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
            ["intra", "simple"]
        );
        let m = han::Modules {
            up: "libnbc".into(),
            low: "tuned".into(),
        };
        assert_eq!(
            forced[0].spec(65536, &m),
            "ompi_han:algorithm=1,name=intra,up=libnbc,low=tuned,segment=65536"
        );
        // simple does not read the segment: none in its spec
        assert_eq!(
            forced[1].spec(65536, &m),
            "ompi_han:algorithm=2,name=simple"
        );
        assert!(han::from_items(&[]).is_err());
        let twice = [(1, "intra".to_string()), (2, "intra".to_string())];
        assert!(han::from_items(&twice).unwrap_err().contains("twice"));
        let odd = [(1, "in tra".to_string())];
        assert!(han::from_items(&odd).unwrap_err().contains("not a word"));
    }

    #[test]
    fn han_modules_read_as_open_mpi_reads_them() {
        use han::{module_in_effect as m, LOW_MODULES, UP_MODULES};
        // Open MPI 5.0's defaults: the string "self" (id 0)
        assert_eq!(m("self", UP_MODULES).unwrap(), "libnbc");
        assert_eq!(m("self", LOW_MODULES).unwrap(), "tuned");
        assert_eq!(m("1", UP_MODULES).unwrap(), "adapt");
        assert_eq!(m("1", LOW_MODULES).unwrap(), "sm");
        assert_eq!(m("0", LOW_MODULES).unwrap(), "tuned");
        // an unknown name is id 0; a component's name is its component id
        assert_eq!(m("nonsense", LOW_MODULES).unwrap(), "tuned");
        assert_eq!(m("basic", LOW_MODULES).unwrap(), "sm");
        let e = m("sm", LOW_MODULES).unwrap_err();
        assert!(e.contains("module 4") && e.contains("1: sm"), "{e}");
        assert!(m("7", UP_MODULES).is_err());
    }

    fn parse(text: &str) -> Result<Forced, String> {
        Forced::from_spec(&AlgoSpec::parse(text).unwrap())
    }

    #[test]
    fn forced_choices_read_by_id_or_name() {
        let b = Forced { id: 6, segment: 0 };
        assert_eq!(parse("ompi_tuned:algorithm=6").unwrap(), b);
        assert_eq!(parse("ompi_tuned:algorithm=binomial").unwrap(), b);
        assert_eq!(parse("ompi_tuned:name=binomial,segment=0").unwrap(), b);
        assert_eq!(
            parse("ompi_tuned:algorithm=linear").unwrap(),
            Forced { id: 1, segment: 0 }
        );
        assert_eq!(
            parse("ompi_tuned:algorithm=3,segment=65536").unwrap(),
            Forced {
                id: 3,
                segment: 65536
            }
        );
        // The canonical spec reads back as itself, and is what bench writes.
        let k = Forced {
            id: 7,
            segment: 1024,
        };
        assert_eq!(Forced::from_spec(&k.spec()).unwrap(), k);
        assert_eq!(
            k.spec().to_string(),
            "ompi_tuned:algorithm=7,name=knomial,segment=1024"
        );
    }

    #[test]
    fn algorithm_zero_is_the_library_decision() {
        for text in [
            "ompi_tuned:algorithm=0",
            "ompi_tuned:algorithm=default",
            "ompi_tuned:algorithm=0,name=default,segment=0",
        ] {
            let f = Forced::from_spec(&AlgoSpec::parse(text).unwrap()).unwrap();
            assert!(f.is_default(), "{text}");
            assert_eq!(
                f.spec().to_string(),
                "ompi_tuned:algorithm=0,name=default,segment=0"
            );
            assert!(f.to_string().contains("own decision"), "{f}");
        }
        let e = Forced::from_spec(&AlgoSpec::parse("ompi_tuned:algorithm=0,segment=1024").unwrap())
            .unwrap_err();
        assert!(e.contains("does not segment"), "{e}");
        assert_eq!(Forced::candidates()[0], Forced { id: 0, segment: 0 });
        assert_eq!(
            Forced::candidates()
                .iter()
                .filter(|f| f.is_default())
                .count(),
            1
        );
    }

    #[test]
    fn bad_forced_choices_say_why() {
        for (text, says) in [
            ("ompi_tuned", "needs `algorithm`"),
            (
                "ompi_tuned:algorithm=11",
                "unknown Open MPI broadcast algorithm 11",
            ),
            (
                "ompi_tuned:algorithm=10",
                "unknown Open MPI broadcast algorithm 10",
            ),
            (
                "ompi_tuned:algorithm=warp",
                "unknown Open MPI broadcast algorithm `warp`",
            ),
            ("ompi_tuned:algorithm=6,name=chain", "make them agree"),
            ("ompi_tuned:algorithm=1,segment=1024", "does not segment"),
            ("ompi_tuned:algorithm=6,segment=4294967296", "larger than"),
            ("ompi_tuned:algorithm=6,radix=4", "no parameter `radix`"),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
    }

    #[test]
    fn the_fixed_decision_follows_open_mpi_4_1s_thresholds() {
        // A few points of each band, read off coll_tuned_decision_fixed.c.
        for (ranks, bytes, alg) in [
            (2, 1, 3),
            (2, 100, 5),
            (2, 4096, 1),
            (2, 200_000, 2),
            (2, 4 << 20, 5),
            (6, 4096, 6),
            (6, 2 << 20, 2),
            (10, 4, 7),
            (10, 1 << 20, 1),
            (20, 1 << 20, 8),
            (40, 1024, 6),
            (40, 4096, 7),
            (100, 1, 7),
            (130, 1, 6),
            (130, 1024, 5),
            (130, 20000, 1),
            (130, 40000, 5),
            (130, 1 << 20, 7),
            (254, 65536, 7),
            (300, 20000, 4),
            (1500, 1 << 20, 8),
            (5000, 10000, 5),
        ] {
            assert_eq!(
                tuned_bcast_decision(ranks, bytes),
                alg,
                "{ranks} ranks, {bytes} B"
            );
        }
    }

    #[test]
    fn candidates_cover_every_algorithm() {
        let c = Forced::candidates();
        for t in TUNED_BCAST {
            assert!(c.iter().any(|f| f.id == t.id), "{}", t.name);
        }
        assert!(c.iter().all(|f| f.segment == 0 || f.tuned().segmented));
        // the default, three unsegmented, six at every segment size
        assert_eq!(c.len(), 1 + 3 + 6 * TUNED_SEGMENTS.len());
    }

    // Open MPI 5.0.11's (and 4.1.4's) description of coll_adapt_bcast_algorithm.
    const ADAPT_DESC: &str = "Algorithm of broadcast, 0: tuned, 1: binomial, 2: in_order_binomial, 3: binary, 4: pipeline, 5: chain, 6: linear";

    #[test]
    fn adapt_choices_read_from_the_description() {
        let all = adapt::from_description(ADAPT_DESC).unwrap();
        let names: Vec<(i32, &str)> = all.iter().map(|c| (c.id, c.name.as_str())).collect();
        assert_eq!(
            names,
            [
                (0, "tuned"),
                (1, "binomial"),
                (2, "in_order_binomial"),
                (3, "binary"),
                (4, "pipeline"),
                (5, "chain"),
                (6, "linear")
            ]
        );
        assert!(all
            .iter()
            .all(|c| adapt::DOCUMENTED.contains(&c.name.as_str())));
        let b = adapt::baselines(&all);
        assert_eq!(b.len(), 6);
        assert!(b.iter().all(|c| c.id != 0));
        assert_eq!(
            b[1].spec(65536),
            "ompi_adapt:algorithm=2,name=in_order_binomial,segment=65536"
        );
        assert!(adapt::from_description("Algorithm of broadcast").is_err());
        assert!(adapt::from_description("x, 1: bin omial").is_err());
        assert!(adapt::from_description("1: binomial, 1: binomial").is_err());
    }
}
