//! Open MPI's coll/libnbc: its nonblocking broadcast (`MPI_Ibcast`) and,
//! from the same schedule builder, its persistent one (`MPI_Bcast_init`,
//! Open MPI 5.0; `MPIX_Bcast_init` in 4.1's extension). libnbc builds a
//! schedule of plain sends and receives when the call is made and runs it
//! as the program tests or waits; which tree it builds is the variable
//! `coll_libnbc_ibcast_algorithm`, read at every call, process-wide, and
//! writable through `MPI_T` (Open MPI 4.1 and 5.0):
//!
//! ```text
//!  0 ignore    libnbc's own decision: linear up to 4 ranks, binomial above
//!              (coll_libnbc_ibcast_skip_dt_decision, on by default; off: chain
//!              of 8 KiB fragments from 64 KiB, 32 KiB fragments from 512 KiB)
//!  1 linear    the root sends to each rank in turn
//!  2 binomial  a binomial tree over the ranks relative to the root
//!  3 chain     one pipeline through every rank, 16 KiB fragments
//!  4 knomial   a k-nomial tree, radix coll_libnbc_ibcast_knomial_radix (4)
//! ```
//!
//! So colltune forces one per call: write the variable, call
//! `PMPI_Ibcast` (or `PMPI_Bcast_init`, whose schedule is built then),
//! write back what it found. The call itself never waits for another rank,
//! so a lock held across the three steps serialises threads without any
//! risk of deadlock (`colltune_mpi::select::nonblocking`).

use colltune_algorithms::{AlgoSpec, ParamValue};

/// The variable libnbc reads at every nonblocking or persistent broadcast.
pub const ALGORITHM: &str = "coll_libnbc_ibcast_algorithm";
/// The global that holds [`ALGORITHM`]'s value, the int libnbc reads
/// (exported by `mca_coll_libnbc.so` in Open MPI 4.1, by `libmpi.so` in
/// 5.0): written there when it is proven to be the variable's storage.
pub const STORAGE: &std::ffi::CStr = c"libnbc_ibcast_algorithm";
/// The `algorithm` column (and spec family) of a forced libnbc sample.
pub const TABLE_NAME: &str = "ompi_libnbc";
/// The names of [`ALGORITHM`]'s values 0-4, as Open MPI 4.1 and 5.0 list
/// them (`ompi_info --param coll libnbc --level 9`).
pub const NAMES: &[&str] = &["ignore", "linear", "binomial", "chain", "knomial"];

/// One of libnbc's broadcast schedules as a table choice (`algorithm:
/// ompi_libnbc`, `params: {algorithm: <id>}`); 0 is libnbc's own decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Forced {
    /// The value of [`ALGORITHM`] (0..=4).
    pub id: i32,
}

impl Forced {
    /// libnbc's own decision, nothing forced.
    pub const DEFAULT: Forced = Forced { id: 0 };

    /// Every schedule a tune measures (the default included).
    pub fn all() -> impl Iterator<Item = Forced> {
        (0..NAMES.len() as i32).map(|id| Forced { id })
    }

    /// Open MPI's name of the schedule (`binomial`).
    pub fn name(&self) -> &'static str {
        usize::try_from(self.id)
            .ok()
            .and_then(|i| NAMES.get(i))
            .copied()
            .unwrap_or("unknown")
    }

    /// Whether this is libnbc's own decision.
    pub fn is_default(&self) -> bool {
        self.id == 0
    }

    /// Reads a table's `ompi_libnbc` specification: `algorithm`, an id
    /// 0-4 or a name (`linear`, `binomial`, `chain`, `knomial`; `ignore`
    /// is libnbc's own decision), and an optional `name` that must agree.
    pub fn from_spec(spec: &AlgoSpec) -> Result<Forced, String> {
        if spec.name != TABLE_NAME {
            return Err(format!("`{}` is not `{TABLE_NAME}`", spec.name));
        }
        let ids = || {
            NAMES
                .iter()
                .enumerate()
                .map(|(i, n)| format!("{i} ({n})"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        if let Some(k) = spec
            .params
            .keys()
            .find(|k| !matches!(k.as_str(), "algorithm" | "name"))
        {
            return Err(format!(
                "{TABLE_NAME} has no parameter `{k}`; it takes algorithm (one of {}) and optionally its name",
                ids()
            ));
        }
        let word = |v: &ParamValue| match v {
            ParamValue::Word(w) => w.clone(),
            o => o.to_string(),
        };
        let Some(alg) = spec.params.get("algorithm").map(word) else {
            return Err(format!(
                "{TABLE_NAME} needs `algorithm`: one of {} ({ALGORITHM}'s values)",
                ids()
            ));
        };
        let id = match alg.parse::<i32>() {
            Ok(i) if (0..NAMES.len() as i32).contains(&i) => i,
            _ => match NAMES.iter().position(|n| *n == alg) {
                Some(i) => i as i32,
                None => {
                    return Err(format!(
                        "{TABLE_NAME}: unknown libnbc broadcast algorithm `{alg}`; {ALGORITHM} takes {}",
                        ids()
                    ))
                }
            },
        };
        let f = Forced { id };
        if let Some(n) = spec.params.get("name").map(word) {
            if n != f.name() {
                return Err(format!(
                    "{TABLE_NAME}: algorithm {id} is {}, but name says `{n}`; make them agree",
                    f.name()
                ));
            }
        }
        Ok(f)
    }

    /// The canonical specification: `ompi_libnbc:algorithm=2,name=binomial`.
    pub fn spec(&self) -> AlgoSpec {
        AlgoSpec::new(TABLE_NAME)
            .with("algorithm", ParamValue::Int(self.id as u64))
            .with("name", ParamValue::Word(self.name().into()))
    }

    /// What libnbc's own decision runs (`coll_libnbc_ibcast_skip_dt_decision`
    /// on, its default): linear up to 4 ranks, binomial above. For
    /// `explain`, which says what the library's default is.
    pub fn default_for(ranks: usize) -> Forced {
        Forced {
            id: if ranks <= 4 { 1 } else { 2 },
        }
    }
}

impl std::fmt::Display for Forced {
    /// `Open MPI's coll/libnbc chain (coll_libnbc_ibcast_algorithm 3)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_default() {
            return f.write_str(
                "Open MPI's coll/libnbc own decision (coll_libnbc_ibcast_algorithm 0: nothing forced)",
            );
        }
        write!(
            f,
            "Open MPI's coll/libnbc {} ({ALGORITHM} {})",
            self.name(),
            self.id
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(t: &str) -> Result<Forced, String> {
        Forced::from_spec(&AlgoSpec::parse(t).unwrap())
    }

    #[test]
    fn ids_and_names_read_and_write_the_canonical_spec() {
        for (t, id) in [
            ("ompi_libnbc:algorithm=3", 3),
            ("ompi_libnbc:algorithm=chain", 3),
            ("ompi_libnbc:algorithm=knomial,name=knomial", 4),
            ("ompi_libnbc:algorithm=0", 0),
            ("ompi_libnbc:algorithm=ignore", 0),
        ] {
            let f = parse(t).unwrap_or_else(|e| panic!("{t}: {e}"));
            assert_eq!(f.id, id, "{t}");
            assert_eq!(Forced::from_spec(&f.spec()).unwrap(), f);
        }
        assert_eq!(
            parse("ompi_libnbc:algorithm=2").unwrap().spec().to_string(),
            "ompi_libnbc:algorithm=2,name=binomial"
        );
        assert!(parse("ompi_libnbc:algorithm=0").unwrap().is_default());
        assert_eq!(Forced::all().count(), 5);
        assert_eq!(Forced::default_for(4).name(), "linear");
        assert_eq!(Forced::default_for(5).name(), "binomial");
    }

    #[test]
    fn bad_specs_say_what_to_write() {
        for (t, says) in [
            ("ompi_libnbc", "needs `algorithm`"),
            (
                "ompi_libnbc:algorithm=5",
                "unknown libnbc broadcast algorithm `5`",
            ),
            ("ompi_libnbc:algorithm=warp", "3 (chain)"),
            ("ompi_libnbc:algorithm=1,name=chain", "make them agree"),
            (
                "ompi_libnbc:algorithm=1,segment=0",
                "no parameter `segment`",
            ),
            ("ompi_tuned:algorithm=1", "is not `ompi_libnbc`"),
        ] {
            let e = parse(t).unwrap_err();
            assert!(e.contains(says), "{t}: {e}");
        }
    }
}
