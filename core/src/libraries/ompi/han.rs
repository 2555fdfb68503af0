//! Open MPI 5.0's coll/han broadcast choices, as baselines across nodes.
//! han is chosen per communicator when it is made, by priority (35: the
//! default across nodes), and serves only communicators that span several
//! nodes ([`HAN_ONE_NODE`]) with as many ranks on each (else it hands every
//! broadcast to the component below it: `are_ppn_imbalanced`,
//! coll_han_bcast.c). Of its broadcast variables (Open MPI 5.0.10's
//! coll_han_component.c and coll_han_dynamic.c; `MPI_T` may write them all
//! on 5.0.11):
//! - [`ALGORITHM`] (`coll_han_use_bcast_algorithm`, an enumeration:
//!   0 default, 1 intra, 2 simple) is read at every call, and obeyed once
//!   its source is no longer the default, which an `MPI_T` write makes it;
//! - [`SEGMENT`] (`coll_han_bcast_segsize`) is read at every call by
//!   `intra` (its pipeline over the two levels), not by `simple`;
//! - [`UP_MODULE`] and [`LOW_MODULE`] (the components of intra's inter-
//!   and intra-node steps: 0 libnbc or 1 adapt; 0 tuned or 1 sm) are
//!   strings han turns into a module id once, when it registers its
//!   variables at `MPI_Init` (`mca_coll_han_query_module_from_mca`): an
//!   `MPI_T` write changes the string and nothing else. So they are no
//!   baselines; the samples say which were in effect.
//!
//! `jobs/check-ompi-forcing.sh` proves each of these on the emulated
//! cluster against Open MPI itself.

/// The priority variable (as [`super::adapt::PRIORITY`]).
pub const PRIORITY: &str = "coll_han_priority";
/// Which of han's broadcasts runs (an enumeration; read per call).
pub const ALGORITHM: &str = "coll_han_use_bcast_algorithm";
/// Bytes per segment of `intra`'s pipeline (an int; read per call; 0:
/// the whole message at once).
pub const SEGMENT: &str = "coll_han_bcast_segsize";
/// The inter-node step's component of `intra` (read at `MPI_Init`).
pub const UP_MODULE: &str = "coll_han_bcast_up_module";
/// The intra-node step's component of `intra` (read at `MPI_Init`).
pub const LOW_MODULE: &str = "coll_han_bcast_low_module";
/// Above every other component (as [`super::adapt::FORCE_PRIORITY`]).
pub const FORCE_PRIORITY: i32 = 100;
/// The `algorithm` column (and spec family) of a forced han sample.
pub const TABLE_NAME: &str = "ompi_han";
/// Value 0 of [`ALGORITHM`]: han's own decision (its dynamic rules
/// file where one is given, else `intra`): the `mpi` baseline across
/// nodes, so no forced one.
pub const DEFAULT: &str = "default";
/// The algorithms that read [`SEGMENT`] (coll_han_bcast.c).
pub const SEGMENTED: &[&str] = &["intra"];
/// What [`UP_MODULE`]'s id selects (han's cached inter-node
/// communicators, coll_han_subcomms.c: 0 libnbc, 1 adapt).
pub const UP_MODULES: &[&str] = &["libnbc", "adapt"];
/// What [`LOW_MODULE`]'s id selects (0 tuned, 1 sm).
pub const LOW_MODULES: &[&str] = &["tuned", "sm"];
/// The component names han's string variables accept, by id
/// (`ompi_coll_han_available_components`, Open MPI 5.0).
pub const COMPONENTS: &[&str] = &["self", "basic", "libnbc", "tuned", "sm", "adapt", "han"];

/// One value of [`ALGORITHM`].
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Choice {
    /// The integer `MPI_T_cvar_write` takes.
    pub id: i32,
    /// Open MPI's name (`intra`, `simple`).
    pub name: String,
}

/// The components of `intra`'s two steps, as `MPI_Init` set them.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Modules {
    pub up: String,
    pub low: String,
}

impl Choice {
    /// Whether it reads [`SEGMENT`].
    pub fn segmented(&self) -> bool {
        SEGMENTED.contains(&self.name.as_str())
    }

    /// The sample's `spec`: `ompi_han:algorithm=1,name=intra,up=libnbc,
    /// low=tuned,segment=65536` for a segmented one (the modules in
    /// effect), `ompi_han:algorithm=2,name=simple` otherwise.
    pub fn spec(&self, segment: u64, modules: &Modules) -> String {
        if self.segmented() {
            format!(
                "{TABLE_NAME}:algorithm={},name={},up={},low={},segment={segment}",
                self.id, self.name, modules.up, modules.low
            )
        } else {
            format!("{TABLE_NAME}:algorithm={},name={}", self.id, self.name)
        }
    }
}

/// The choices of [`ALGORITHM`]'s `MPI_T` enumeration, (value, name)
/// items in the order given. The error says what could not be read.
pub fn from_items(items: &[(i32, String)]) -> Result<Vec<Choice>, String> {
    let mut out: Vec<Choice> = Vec::new();
    for (id, name) in items {
        if name.is_empty()
            || !name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        {
            return Err(format!("item {id} has the name {name:?}, not a word"));
        }
        if out.iter().any(|c| c.id == *id || c.name == *name) {
            return Err(format!("item `{id}: {name}` appears twice"));
        }
        out.push(Choice {
            id: *id,
            name: name.clone(),
        });
    }
    if out.is_empty() {
        return Err("the enumeration has no items".into());
    }
    Ok(out)
}

/// The algorithms worth forcing: every one but [`DEFAULT`].
pub fn baselines(all: &[Choice]) -> Vec<Choice> {
    all.iter().filter(|c| c.name != DEFAULT).cloned().collect()
}

/// The component one of han's module strings selects, as han reads it
/// at `MPI_Init`: a number, else a component's name turned into its id
/// ([`COMPONENTS`]; an unknown name is 0), that id indexing `names`
/// ([`UP_MODULES`] or [`LOW_MODULES`]). An id past them is refused:
/// han 5.0 indexes its array with it unchecked (so `sm`, id 4, is no
/// way to ask for the sm low module: write 1).
pub fn module_in_effect(value: &str, names: &[&'static str]) -> Result<&'static str, String> {
    let v = value.trim();
    let digits = v.len() - v.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let id: i64 = if digits > 0 {
        v[..digits]
            .parse()
            .map_err(|_| format!("`{value}` is too large"))?
    } else {
        COMPONENTS.iter().position(|c| *c == v).unwrap_or(0) as i64
    };
    usize::try_from(id)
        .ok()
        .and_then(|i| names.get(i).copied())
        .ok_or_else(|| {
            format!(
                "`{value}` is module {id}, but han has only {} here ({})",
                names.len(),
                names
                    .iter()
                    .enumerate()
                    .map(|(i, n)| format!("{i}: {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
}
