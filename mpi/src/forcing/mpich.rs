//! MPICH's own broadcast algorithms as baselines: which ones the library
//! offers (read through `MPI_T`, [`colltune_core::libraries::mpich`] parses), and
//! forcing one for the duration of a point.
//!
//! MPICH reads `MPIR_CVAR_BCAST_INTRA_ALGORITHM` at every `MPI_Bcast`,
//! process-wide, so a point writes it before its first call and the
//! measurer writes back the value found at start after the point. Before
//! timing, one call runs with `MPIR_CVAR_COLLECTIVE_FALLBACK` set to
//! `error`: where MPICH cannot apply the algorithm to these arguments (smp
//! on a communicator of one node, recursive doubling on a size not a power
//! of two, ...) it then returns an error instead of silently running its
//! own choice, and the point is skipped (`bench::BenchError::NotApplicable`)
//! rather than recorded under a name that did not run.

use colltune_core::libraries::mpich::{
    forced_baselines, from_description, from_enum, Choice, BCAST_CVAR, DOCUMENTED_BCAST,
    DOCUMENTED_FALLBACK, FALLBACK_CVAR,
};

use crate::transport::mpi::{ffi, MpiError};

/// Why the library's algorithms cannot be forced here, said once.
#[derive(Debug, thiserror::Error)]
pub enum MpichUnavailable {
    #[error("{library} has no MPIR_CVAR_BCAST_INTRA_ALGORITHM control variable through MPI_T ({why}); Intel MPI chooses its broadcast by I_MPI_ADJUST_BCAST, read at MPI_Init: jobs/library-baselines.sh runs one bench per algorithm")]
    NoVariable { library: String, why: String },
    #[error("{library}: cannot read the algorithms MPIR_CVAR_BCAST_INTRA_ALGORITHM takes: {why}")]
    Unreadable { library: String, why: String },
    #[error("{library} refuses to write MPIR_CVAR_BCAST_INTRA_ALGORITHM through MPI_T: {why}")]
    NotWritable { library: String, why: String },
}

/// What this MPI library offers through [`BCAST_CVAR`].
#[derive(Clone, Debug)]
pub struct Offered {
    /// Every algorithm, `auto` included, with the value `MPI_T_cvar_write`
    /// takes.
    pub all: Vec<Choice>,
    /// The variable's value now (as the library started: `auto`, unless
    /// the environment set it).
    pub current: i32,
}

impl Offered {
    /// The algorithms worth forcing: every one but `auto`.
    pub fn baselines(&self) -> Vec<Choice> {
        forced_baselines(&self.all)
    }
    /// The name of the current value, or the number when none has it.
    pub fn current_name(&self) -> String {
        self.all
            .iter()
            .find(|c| c.value == self.current)
            .map(|c| c.name.clone())
            .unwrap_or_else(|| format!("value {} (no name)", self.current))
    }
}

/// The broadcast algorithms this MPI library offers through
/// [`BCAST_CVAR`], after checking that the variable can be written (the
/// current value is written back).
pub fn bcast_algorithms() -> Result<Offered, MpichUnavailable> {
    let library = super::library_short();
    let info = ffi::cvar_info(BCAST_CVAR).map_err(|e| MpichUnavailable::NoVariable {
        library: library.clone(),
        why: e.message,
    })?;
    let all = match &info.items {
        Some(items) => from_enum(items),
        None => from_description(&info.description, DOCUMENTED_BCAST),
    }
    .map_err(|why| MpichUnavailable::Unreadable {
        library: library.clone(),
        why,
    })?;
    let now = ffi::cvar_read_int(BCAST_CVAR).map_err(|e| MpichUnavailable::NotWritable {
        library: library.clone(),
        why: e.to_string(),
    })?;
    ffi::cvar_write_int(BCAST_CVAR, now).map_err(|e| MpichUnavailable::NotWritable {
        library: library.clone(),
        why: e.to_string(),
    })?;
    Ok(Offered { all, current: now })
}

/// The value of [`FALLBACK_CVAR`] that makes MPICH refuse, with an error,
/// a forced algorithm it cannot apply; why not, where the library has no
/// such variable or its values cannot be read.
pub fn fallback_error_value() -> Result<i32, String> {
    let info = ffi::cvar_info(FALLBACK_CVAR).map_err(|e| e.message)?;
    let choices = match &info.items {
        Some(items) => from_enum(items)?,
        None => from_description(&info.description, DOCUMENTED_FALLBACK)?,
    };
    choices
        .iter()
        .find(|c| c.name == "error")
        .map(|c| c.value)
        .ok_or_else(|| format!("{FALLBACK_CVAR} has no value `error`"))
}

/// What the measurer puts back after a forced point, read at the first.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Saved {
    /// [`BCAST_CVAR`] as found (auto, unless the environment set it).
    pub algorithm: i32,
    /// [`FALLBACK_CVAR`] as found and its `error` value, where the library
    /// has it.
    pub fallback: Option<(i32, i32)>,
}

impl Saved {
    pub(crate) fn read() -> Result<Saved, MpiError> {
        let algorithm = ffi::cvar_read_int(BCAST_CVAR)?;
        let fallback = fallback_error_value()
            .ok()
            .and_then(|error| Some((ffi::cvar_read_int(FALLBACK_CVAR).ok()?, error)));
        Ok(Saved {
            algorithm,
            fallback,
        })
    }
}

/// Writes [`BCAST_CVAR`] and reads it back.
pub(crate) fn write_algorithm(value: i32) -> Result<(), MpiError> {
    ffi::cvar_write_int(BCAST_CVAR, value)?;
    let back = ffi::cvar_read_int(BCAST_CVAR)?;
    if back != value {
        return Err(MpiError {
            call: "MPI_T_cvar_read",
            code: -1,
            message: format!("{BCAST_CVAR}: wrote {value}, read back {back}"),
        });
    }
    Ok(())
}

/// Writes [`FALLBACK_CVAR`].
pub(crate) fn write_fallback(value: i32) -> Result<(), MpiError> {
    ffi::cvar_write_int(FALLBACK_CVAR, value)
}
