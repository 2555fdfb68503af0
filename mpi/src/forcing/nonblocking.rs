//! The MPI library's nonblocking and persistent broadcast algorithms,
//! forced per call: Open MPI coll/libnbc's `coll_libnbc_ibcast_algorithm`
//! and MPICH's `MPIR_CVAR_IBCAST_INTRA_ALGORITHM`, both read by the
//! library when `MPI_Ibcast` or `MPI_Bcast_init` builds its schedule,
//! process-wide. Written once for the runtime (`select::nonblocking`, a
//! table's `ibcast` and `bcast_init` rules) and the benchmark (the
//! library's nonblocking algorithms as subjects).
//!
//! ```text
//!  lock ── write the variable ── PMPI_Ibcast / PMPI_Bcast_init ── write back ── unlock
//! ```
//!
//! The variable is written at its own storage where that is found and
//! proven at set-up ([`storage`]: Open MPI's libnbc, a load and two
//! stores), else through `MPI_T` (MPICH hides its variables' symbols: a
//! read and two writes, several hundred instructions a call).
//!
//! The call between never waits for another rank (it only builds and
//! starts a schedule), so the lock cannot deadlock, also under
//! `MPI_THREAD_MULTIPLE`: two threads' calls each see their own value,
//! and there a call of the library's own decision takes the lock too (it
//! must see the library's value, not another thread's forced one).

use std::ffi::{c_int, CStr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use colltune_core::libraries::library::LibraryChoice;
use colltune_core::libraries::mpich::{from_description, from_enum};
use colltune_core::libraries::mpich_ibcast::{self, IBCAST_CVAR};
use colltune_core::libraries::ompi::libnbc;

use super::storage::Storage;
use crate::transport::mpi::ffi::{self, Cvar};

/// One variable and the value that forces a choice; None: the library's
/// own decision (nothing written).
#[derive(Clone, Copy, Debug)]
pub struct NbForcing(Option<(Var, c_int)>);

/// How a variable is written: at its storage, or through `MPI_T`.
#[derive(Clone, Copy, Debug)]
enum Var {
    Storage(Storage),
    Mpit(Cvar),
}

impl Var {
    #[inline]
    fn read(&self) -> Option<c_int> {
        match self {
            Var::Storage(s) => Some(s.read()),
            Var::Mpit(c) => c.read().ok(),
        }
    }

    #[inline]
    fn write(&self, value: c_int) -> bool {
        match self {
            Var::Storage(s) => {
                s.write(value);
                true
            }
            Var::Mpit(c) => c.write(value).is_ok(),
        }
    }
}

/// Serialises the write / call / write back of every forced nonblocking
/// call in this process (the variables are process-wide).
static LOCK: Mutex<()> = Mutex::new(());

/// Whether a call of the library's own decision takes [`LOCK`] too: set
/// once a variable is forced in a process whose threads may call at once
/// (`MPI_THREAD_MULTIPLE`). Without it such a call could build its
/// schedule while another thread's forced value is written, and run
/// another algorithm than the same call on the other ranks.
static SHARED: AtomicBool = AtomicBool::new(false);

impl NbForcing {
    /// Nothing forced: the library's own decision.
    pub const LIBRARY: NbForcing = NbForcing(None);

    /// Whether nothing is forced (the library's own decision).
    pub fn is_library(&self) -> bool {
        self.0.is_none()
    }

    /// How the variable is written, for the trace: empty where nothing is
    /// forced.
    pub fn how(&self) -> &'static str {
        match self.0 {
            None => "",
            Some((Var::Storage(_), _)) => " (forced at the variable's storage)",
            Some((Var::Mpit(_), _)) => " (forced through MPI_T)",
        }
    }

    /// Runs `call` (which must not wait for another rank: `PMPI_Ibcast`,
    /// `PMPI_Bcast_init`) with the variable written, and writes back what
    /// it found. A variable that cannot be written now (it could when set
    /// up) is left alone: the call still runs.
    #[inline]
    pub fn run<T>(&self, call: impl FnOnce() -> T) -> T {
        let Some((var, value)) = self.0 else {
            let _g = SHARED
                .load(Ordering::Acquire)
                .then(|| LOCK.lock().unwrap_or_else(|p| p.into_inner()));
            return call();
        };
        let _g = LOCK.lock().unwrap_or_else(|p| p.into_inner());
        let old = match var.read() {
            Some(now) if now != value && var.write(value) => Some(now),
            _ => None,
        };
        let r = call();
        if let Some(was) = old {
            var.write(was);
        }
        r
    }
}

/// The storage of variable `var` ([`Storage::find`]), looked for once per
/// process and variable (every choice of one library forces the same
/// variable; the object it lies in stays loaded).
fn storage_of(var: &'static str, cvar: &Cvar, symbol: &CStr, values: &[c_int]) -> Option<Storage> {
    static FOUND: Mutex<Vec<(&'static str, Option<Storage>)>> = Mutex::new(Vec::new());
    let mut found = FOUND.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, s)) = found.iter().find(|(v, _)| *v == var) {
        return *s;
    }
    let s = {
        // No forced call may run while the proof writes the variable.
        let _g = LOCK.lock().unwrap_or_else(|p| p.into_inner());
        Storage::find(cvar, symbol, values)
    };
    found.push((var, s));
    s
}

/// The values a library's enumeration variable takes, by name: from its
/// enumeration where `MPI_T` gives one, else its description (MPICH).
fn offered(var: &str, documented: &[&str]) -> Result<Vec<(c_int, String)>, String> {
    let info =
        ffi::cvar_info(var).map_err(|e| format!("no {var} through MPI_T ({})", e.message))?;
    match &info.items {
        Some(items) => Ok(items.clone()),
        None => Ok(from_description(&info.description, documented)?
            .into_iter()
            .map(|c| (c.value, c.name))
            .collect()),
    }
}

/// How `f` is forced in this library: its variable opened and checked
/// writable (its value written back), and the value of `f`'s name there.
/// The error says why it cannot be (another library, an algorithm this
/// one lacks, a variable `MPI_T` will not write).
pub fn forcing(f: LibraryChoice) -> Result<NbForcing, String> {
    if f.is_default() {
        return Ok(NbForcing::LIBRARY);
    }
    let (var, name, symbol): (&'static str, &str, &CStr) = match f {
        LibraryChoice::Libnbc(l) => (libnbc::ALGORITHM, l.name(), libnbc::STORAGE),
        LibraryChoice::MpichIbcast(m) => (IBCAST_CVAR, m.name, mpich_ibcast::STORAGE),
        other => return Err(format!("{other} is a blocking broadcast's algorithm")),
    };
    let documented: &[&str] = match f {
        LibraryChoice::Libnbc(_) => libnbc::NAMES,
        _ => mpich_ibcast::DOCUMENTED,
    };
    let items = offered(var, documented)?;
    let items = match from_enum(&items) {
        Ok(c) => c.into_iter().map(|c| (c.value, c.name)).collect(),
        Err(_) => items,
    };
    let Some(&(value, _)) = items.iter().find(|(_, n)| n == name) else {
        return Err(format!(
            "this library's {var} has no `{name}` (it offers {})",
            items
                .iter()
                .map(|(_, n)| n.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    };
    let cvar = Cvar::open(var).map_err(|e| e.to_string())?;
    let now = cvar.read().map_err(|e| e.to_string())?;
    cvar.write(now)
        .map_err(|e| format!("MPI_T will not write {var}: {e}"))?;
    let values: Vec<c_int> = items.iter().map(|(v, _)| *v).collect();
    let way = storage_of(var, &cvar, symbol, &values);
    if ffi::thread_multiple() {
        SHARED.store(true, Ordering::Release);
    }
    Ok(NbForcing(Some((
        way.map_or(Var::Mpit(cvar), Var::Storage),
        value,
    ))))
}

/// Every nonblocking algorithm of this library a benchmark can force, the
/// library's own decision first: coll/libnbc's on Open MPI, MPICH's
/// `MPIR_CVAR_IBCAST_INTRA_ALGORITHM` names (`auto` and `sched_auto`
/// are its own decision) on MPICH; empty where neither variable exists.
pub fn offered_choices() -> Vec<LibraryChoice> {
    if let Ok(items) = offered(libnbc::ALGORITHM, libnbc::NAMES) {
        return libnbc::Forced::all()
            .filter(|f| f.is_default() || items.iter().any(|(_, n)| n == f.name()))
            .map(LibraryChoice::Libnbc)
            .collect();
    }
    match offered(IBCAST_CVAR, mpich_ibcast::DOCUMENTED) {
        Ok(items) => mpich_ibcast::DOCUMENTED
            .iter()
            .filter(|d| {
                **d != "sched_auto" && (**d == "auto" || items.iter().any(|(_, n)| n == *d))
            })
            .filter_map(|d| mpich_ibcast::Forced::from_name(d))
            .map(LibraryChoice::MpichIbcast)
            .collect(),
        Err(_) => Vec::new(),
    }
}
