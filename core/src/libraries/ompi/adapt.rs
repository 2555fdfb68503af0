//! Open MPI's coll/adapt component (Open MPI 4.1 and later): event-driven
//! broadcast trees whose segments a rank forwards the moment they land.
//! Off by default (`coll_adapt_priority` 0, below coll/tuned's 30 and
//! coll/han's 35). Its broadcast shape is `coll_adapt_bcast_algorithm`,
//! its segment `coll_adapt_bcast_segment_size` (0: none), both read at
//! every call (process-wide); the component itself is chosen per
//! communicator, when the communicator is made, by priority. Open MPI 5.0
//! lets `MPI_T` write all three (its 5.0.x changelog: "Adjusted MCA
//! variable scopes ... to allow setting via the MPI_T interface: coll
//! adapt, ucc, han, ..."); 4.1 has them read-only, read at `MPI_Init`.
//! So colltune forces it as it forces coll/tuned: raise the priority,
//! `MPI_Comm_dup`, put the priority back; then, per point, the algorithm
//! and segment (see `colltune_mpi::bench::adapt`).

use colltune_algorithms::{AlgoSpec, ParamValue};

/// The priority variable; what a communicator made after writing
/// [`FORCE_PRIORITY`] to it gets its broadcast from.
pub const PRIORITY: &str = "coll_adapt_priority";
/// The broadcast algorithm (an int; read per call).
pub const ALGORITHM: &str = "coll_adapt_bcast_algorithm";
/// Bytes per segment (an int, 0: no segmentation; read per call).
pub const SEGMENT: &str = "coll_adapt_bcast_segment_size";
/// Above every coll component that can serve an intra-communicator of
/// several ranks in Open MPI 5.0 (han 35, tuned 30, basic and libnbc
/// 10; self 75 serves only one rank, inter 40 only inter-communicators,
/// sync 50 only when told to add barriers): the value Open MPI's 4.1.0
/// release notes give to enable adapt.
pub const FORCE_PRIORITY: i32 = 100;
/// The `algorithm` column (and spec family) of a forced adapt sample.
pub const TABLE_NAME: &str = "ompi_adapt";
/// The names Open MPI 4.1 and 5.0 document for [`ALGORITHM`] (its
/// description: "Algorithm of broadcast, 0: tuned, 1: binomial, ...").
/// Used only to check what a library's description says, never as the
/// list of what it offers.
pub const DOCUMENTED: &[&str] = &[
    "tuned",
    "binomial",
    "in_order_binomial",
    "binary",
    "pipeline",
    "chain",
    "linear",
];
/// Value 0, `tuned`: adapt answers it with OMPI_ERR_NOT_IMPLEMENTED
/// (coll_adapt_ibcast.c), so it is no baseline.
pub const NOT_IMPLEMENTED: &str = "tuned";

/// One value of [`ALGORITHM`].
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Choice {
    /// The integer `MPI_T_cvar_write` takes.
    pub id: i32,
    /// Open MPI's name (`in_order_binomial`).
    pub name: String,
}

impl Choice {
    /// The sample's `spec`: `ompi_adapt:algorithm=1,name=binomial,segment=0`.
    pub fn spec(&self, segment: u64) -> String {
        format!(
            "{TABLE_NAME}:algorithm={},name={},segment={segment}",
            self.id, self.name
        )
    }
}

/// Segment sizes the tuner tries for coll/adapt's algorithms: 0 (adapt
/// then sends the message whole) and two of coll/tuned's
/// ([`super::TUNED_SEGMENTS`]), so a tune measures 18 adapt candidates.
pub const TUNE_SEGMENTS: &[u32] = &[0, 8192, 65536];

/// One of coll/adapt's broadcast algorithms as a table choice
/// (`algorithm: ompi_adapt`): run on a duplicate adapt serves, its
/// algorithm and segment written around each call (adapt reads them per
/// call, process-wide; `colltune_mpi::select::library`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Forced {
    /// The value of [`ALGORITHM`] (1..=6; 0, `tuned`, is refused).
    pub id: i32,
    /// Bytes per segment ([`SEGMENT`]); 0: none.
    pub segment: u32,
}

impl Forced {
    /// Open MPI's name of the algorithm (`in_order_binomial`).
    pub fn name(&self) -> &'static str {
        usize::try_from(self.id)
            .ok()
            .and_then(|i| DOCUMENTED.get(i))
            .copied()
            .unwrap_or("unknown")
    }

    /// The table choice of an algorithm the library offers (read from
    /// its description), at `segment`; None where the library's value
    /// and name are not the ones Open MPI documents (a table could not
    /// say it), or for `tuned`.
    pub fn from_choice(c: &Choice, segment: u32) -> Option<Forced> {
        let f = Forced { id: c.id, segment };
        (c.name != NOT_IMPLEMENTED && f.name() == c.name).then_some(f)
    }

    /// Reads a table's `ompi_adapt` specification: `algorithm` (1-6 or
    /// a name: `binomial`, `in_order_binomial`, `binary`, `pipeline`,
    /// `chain`, `linear`), an optional `name` (which must agree) and
    /// `segment` (bytes, default 0).
    pub fn from_spec(spec: &AlgoSpec) -> Result<Forced, String> {
        if spec.name != TABLE_NAME {
            return Err(format!("`{}` is not `{TABLE_NAME}`", spec.name));
        }
        let ids = || {
            DOCUMENTED
                .iter()
                .enumerate()
                .filter(|(_, n)| **n != NOT_IMPLEMENTED)
                .map(|(i, n)| format!("{i} ({n})"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        for k in spec.params.keys() {
            if !["algorithm", "name", "segment"].contains(&k.as_str()) {
                return Err(format!(
                    "{TABLE_NAME} has no parameter `{k}`; it takes algorithm (1-6 or a name), segment (bytes, 0: none) and name"
                ));
            }
        }
        let by_word = |w: &str| -> Result<i32, String> {
            let id = DOCUMENTED
                .iter()
                .position(|n| *n == w)
                .or_else(|| w.parse::<usize>().ok().filter(|&i| i < DOCUMENTED.len()));
            match id {
                Some(0) => Err(format!(
                    "{TABLE_NAME}: coll/adapt's algorithm 0 ({NOT_IMPLEMENTED}) is not implemented (adapt answers it with an error); choose one of {}",
                    ids()
                )),
                Some(i) => Ok(i as i32),
                None => Err(format!(
                    "{TABLE_NAME}: unknown coll/adapt broadcast algorithm `{w}`; coll/adapt has {}",
                    ids()
                )),
            }
        };
        let word = |v: &ParamValue| match v {
            ParamValue::Word(w) => w.clone(),
            o => o.to_string(),
        };
        let from_algorithm = spec
            .params
            .get("algorithm")
            .map(|v| by_word(&word(v)))
            .transpose()?;
        let from_name = spec
            .params
            .get("name")
            .map(|v| by_word(&word(v)))
            .transpose()?;
        let id = match (from_algorithm, from_name) {
            (Some(a), Some(n)) if a != n => {
                return Err(format!(
                    "{TABLE_NAME}: algorithm {a} is {}, but name says {}; make them agree (or drop name)",
                    DOCUMENTED[a as usize], DOCUMENTED[n as usize]
                ))
            }
            (Some(i), _) | (None, Some(i)) => i,
            (None, None) => {
                return Err(format!("{TABLE_NAME} needs `algorithm`: one of {}", ids()))
            }
        };
        Ok(Forced {
            id,
            segment: super::segment_param(TABLE_NAME, spec)?,
        })
    }

    /// The canonical specification, as bench records it:
    /// `ompi_adapt:algorithm=1,name=binomial,segment=0`.
    pub fn spec(&self) -> AlgoSpec {
        AlgoSpec::new(TABLE_NAME)
            .with_int("algorithm", self.id as u64)
            .with("name", ParamValue::Word(self.name().into()))
            .with_int("segment", u64::from(self.segment))
    }

    /// The coll/tuned algorithm of the same shape (what a coll/tuned
    /// rules file can say in its place).
    pub fn tuned_shape(&self) -> super::Forced {
        let id = match self.name() {
            "binomial" | "in_order_binomial" => 6,
            "binary" => 5,
            "pipeline" => 3,
            "chain" => 2,
            _ => 1,
        };
        let segment = if id == 1 { 0 } else { self.segment };
        super::Forced { id, segment }
    }
}

impl std::fmt::Display for Forced {
    /// `Open MPI's coll/adapt binomial (algorithm 1, segment 0)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Open MPI's coll/adapt {} (algorithm {}, segment {})",
            self.name(),
            self.id,
            self.segment
        )
    }
}

/// The choices [`ALGORITHM`]'s description lists, `N: name` entries
/// separated by commas (Open MPI 4.1.4 and 5.0.11 alike), in the order
/// written. The error says what could not be read.
pub fn from_description(desc: &str) -> Result<Vec<Choice>, String> {
    let mut out: Vec<Choice> = Vec::new();
    for part in desc.split(',') {
        let Some((num, name)) = part.split_once(':') else {
            continue;
        };
        let Ok(id) = num.trim().parse::<i32>() else {
            continue;
        };
        let name = name.trim();
        if name.is_empty()
            || !name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        {
            return Err(format!("entry {id} has the name {name:?}, not a word"));
        }
        if out.iter().any(|c| c.id == id || c.name == name) {
            return Err(format!("entry `{id}: {name}` appears twice"));
        }
        out.push(Choice {
            id,
            name: name.to_string(),
        });
    }
    if out.is_empty() {
        return Err(format!("no `N: name` entries in {desc:?}"));
    }
    Ok(out)
}

/// The algorithms worth forcing: every one but [`NOT_IMPLEMENTED`].
pub fn baselines(all: &[Choice]) -> Vec<Choice> {
    all.iter()
        .filter(|c| c.name != NOT_IMPLEMENTED)
        .cloned()
        .collect()
}
