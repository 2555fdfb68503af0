//! Open MPI's coll/tuned broadcast algorithms: their numeric ids (as
//! `coll_tuned_bcast_algorithm` and the dynamic rules file use them), their
//! names, and colltune's equivalent. Used to force them as benchmark
//! baselines, as table choices ([`Forced`]: `algorithm: ompi_tuned`) and to
//! export tables to Open MPI's formats.

use colltune_algorithms::{AlgoSpec, ParamValue};

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
        let segment = match spec.params.get("segment") {
            None => 0,
            Some(ParamValue::Int(s)) => u32::try_from(*s)
                .ok()
                .filter(|&s| s <= i32::MAX as u32)
                .ok_or_else(|| {
                    format!(
                        "{TABLE_NAME}: segment {s} is larger than Open MPI takes (2^31 - 1 bytes)"
                    )
                })?,
            Some(other) => {
                let t = match other {
                    ParamValue::Word(w) => w.clone(),
                    o => o.to_string(),
                };
                return Err(if t.trim_start().starts_with('-') {
                    format!("{TABLE_NAME}: segment {t} is negative; write 0 (no segmentation) or a size in bytes")
                } else {
                    format!("{TABLE_NAME}: segment `{t}` is not a size; write 0 (no segmentation) or bytes (65536 or 64K)")
                });
            }
        };
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

    /// The canonical specification, as tables, samples and labels write it:
    /// `ompi_tuned:algorithm=6,name=binomial,segment=0`.
    pub fn spec(&self) -> AlgoSpec {
        AlgoSpec::new(TABLE_NAME)
            .with_int("algorithm", u64::from(self.id))
            .with("name", ParamValue::Word(self.tuned().name.into()))
            .with_int("segment", u64::from(self.segment))
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn candidates_cover_every_algorithm() {
        let c = Forced::candidates();
        for t in TUNED_BCAST {
            assert!(c.iter().any(|f| f.id == t.id), "{}", t.name);
        }
        assert!(c.iter().all(|f| f.segment == 0 || f.tuned().segmented));
        // the default, three unsegmented, six at every segment size
        assert_eq!(c.len(), 1 + 3 + 6 * TUNED_SEGMENTS.len());
    }
}
