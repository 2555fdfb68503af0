//! The MPI library's own algorithms as table choices
//! ([`LibraryChoice`]): per communicator, what each choice the table makes
//! needs to run forced ([`Forcing`]), set up once.
//!
//! - Open MPI coll/tuned (`ompi_tuned`): Open MPI reads
//!   `coll_tuned_bcast_algorithm` and `_segmentsize` when a communicator is
//!   created (and only with `coll_tuned_use_dynamic_rules` on, which it
//!   reads once at `MPI_Init`; the interposition library turns it on there,
//!   where a table's rule needs it, see `runtime::mpi_init`). So forcing is:
//!   remember the two variables, write them through `MPI_T`, make a
//!   private communicator of the user's ranks, write back what they were,
//!   so the application's later communicators keep Open MPI's own decision
//!   (`forcing::tuned`). Then `PMPI_Bcast` on it runs the forced algorithm.
//!   Algorithm 0 (Open MPI's own decision) needs none: the interposer runs
//!   the library's `MPI_Bcast` on the user's communicator for it.
//! - Open MPI 5.0 coll/adapt (`ompi_adapt`): Open MPI picks a
//!   communicator's components when it is made, by priority, so the
//!   communicator is made with `coll_adapt_priority` raised and put back at
//!   once (`forcing::component`, shared with the benchmark).
//!   adapt reads `coll_adapt_bcast_algorithm` and `_segment_size` at every
//!   call, process-wide, so each call writes them (where they differ from
//!   what is set) before `PMPI_Bcast` on the duplicate and puts back what
//!   it found after: the application's other broadcasts, and other
//!   duplicates' calls, see their own values.
//! - MPICH (`mpich`): `MPIR_CVAR_BCAST_INTRA_ALGORITHM`, read at every call
//!   process-wide, written around `PMPI_Bcast` on the user's communicator
//!   and put back, as for adapt (MPICH's own collectives call its
//!   broadcast inside, so it must not stay forced). `auto` is MPICH's own
//!   decision: nothing forced, like coll/tuned's 0.
//!
//! The variables are held open ([`ffi::Cvar`]: one `MPI_T_cvar_read` and
//! up to two `MPI_T_cvar_write` per variable and call, no lookup). Their
//! values come from the running library, read as the benchmark reads them
//! (`forcing::adapt::bcast_algorithms`, `forcing::mpich::bcast_algorithms`),
//! which also checks that `MPI_T` may write them.
//!
//! Threads: a per-call variable is process-wide, so under
//! `MPI_THREAD_MULTIPLE` two threads' broadcasts could each read the
//! other's value, and ranks run different algorithms (a hang). Holding a
//! lock across the broadcast would not help (a lock held across a blocking
//! collective deadlocks when two threads' calls meet in another order on
//! another rank). So adapt and MPICH choices are not forced under
//! `MPI_THREAD_MULTIPLE`: the library's default runs, warned once.
//! coll/tuned choices are (their variables are read once, when the
//! duplicate is made under [`FORCING`]).
//!
//! A forcing is set up lazily, at the first call that chooses it, and that
//! is collective-safe: the choice depends only on what every rank shares
//! (the communicator, the byte count), so every rank sets it up at the
//! same call. Setting up ends with one allreduce on the communicator, so
//! every rank agrees whether forcing worked; where it did not (another
//! library, a variable `MPI_T` will not write, an algorithm this library
//! does not have, dynamic rules off, threads), every rank runs the
//! library's default `MPI_Bcast` for that choice instead, with one
//! warning. The forced communicators are private ones (`super::private`:
//! made with `MPI_Comm_create_group`, no attribute copied, shared by
//! communicators of the same ranks and choice where that is safe), let go
//! with the communicator's state (when the application frees the
//! communicator, or at `MPI_Finalize`).

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::ffi::c_int;
use std::sync::{Arc, Mutex, OnceLock};

use colltune_algorithms::{AlgoSpec, Execution};

use colltune_core::libraries::library::LibraryChoice;
use colltune_core::libraries::mpich;
use colltune_core::libraries::ompi::{adapt, Forced};

use super::private::{Private, Shared};
use crate::forcing;
use crate::transport::mpi::ffi::{self, Cvar, MPI_Comm};

/// What one library choice runs with on one communicator, once set up:
/// the communicator (a forced private one, or the user's) and the variables
/// written around each call. Plain data: read by any thread without a lock.
#[derive(Clone, Copy, Debug)]
pub struct Forcing {
    /// The forced communicator to run on; None: the user's communicator.
    comm: Option<MPI_Comm>,
    per_call: PerCall,
}

/// Variables a choice writes around each call (and puts back after).
#[derive(Clone, Copy, Debug)]
enum PerCall {
    None,
    Set([Option<(Cvar, c_int)>; 2]),
}

impl Forcing {
    /// The forced communicator it runs on, if any (None: the user's communicator).
    pub fn comm(&self) -> Option<MPI_Comm> {
        self.comm
    }

    /// Runs `call` on the communicator to use (the forced one, else `user`)
    /// with the choice's variables written before and put back after.
    /// A variable that cannot be written here (it could at setup, on every
    /// rank) is left as it is: the call still runs, never skipped, so no
    /// rank is left waiting.
    #[inline]
    pub fn run<T>(&self, user: MPI_Comm, call: impl FnOnce(MPI_Comm) -> T) -> T {
        let comm = self.comm.unwrap_or(user);
        let PerCall::Set(vars) = self.per_call else {
            return call(comm);
        };
        let mut old: [Option<c_int>; 2] = [None; 2];
        for (i, (var, value)) in vars
            .iter()
            .enumerate()
            .filter_map(|(i, v)| Some((i, (*v)?)))
        {
            match var.read() {
                Ok(now) if now == value => {}
                Ok(now) => {
                    if var.write(value).is_ok() {
                        old[i] = Some(now);
                    }
                }
                Err(_) => {}
            }
        }
        let r = call(comm);
        for (i, v) in vars.iter().enumerate() {
            if let (Some((var, _)), Some(was)) = (v, old[i]) {
                let _ = var.write(was);
            }
        }
        r
    }
}

/// Per communicator: the forcings set up so far, by choice (None: forcing
/// is unavailable here, the library's default runs), and the forced
/// communicators they hold.
#[derive(Default)]
pub(crate) struct LibraryComms {
    made: RefCell<Vec<(LibraryChoice, Made)>>,
}

/// What one choice's set-up made: the forcing and its communicator, or
/// nothing where the choice could not be forced.
type Made = Option<(Forcing, Option<Arc<Shared>>)>;

impl LibraryComms {
    /// How `f` runs on `p`'s communicator: set up at the first call
    /// (collective over it, as that call is); None where it cannot be
    /// forced (then the library's default broadcast on the user's
    /// communicator).
    pub(crate) fn get(&self, p: &Private, f: LibraryChoice) -> Option<Forcing> {
        if let Some((_, c)) = self.made.borrow().iter().find(|(k, _)| *k == f) {
            return c.as_ref().map(|(x, _)| *x);
        }
        let made = match make(p, f) {
            Ok(c) => Some(c),
            Err(why) => {
                warn_once(
                    p.shape().rank(),
                    &format!(
                        "cannot force {f} here: {why}; the table's rule runs the MPI library's default MPI_Bcast instead"
                    ),
                );
                None
            }
        };
        let forcing = made.as_ref().map(|(x, _)| *x);
        self.made.borrow_mut().push((f, made));
        forcing
    }

    /// How many forced communicators are held (for tests and traces).
    pub(crate) fn len(&self) -> usize {
        self.made
            .borrow()
            .iter()
            .filter(|(_, c)| matches!(c, Some((_, Some(_)))))
            .count()
    }
}

/// Serialises forcing in this process: the variables are process-wide.
static FORCING: Mutex<()> = Mutex::new(());

fn forcing_lock() -> std::sync::MutexGuard<'static, ()> {
    FORCING.lock().unwrap_or_else(|p| p.into_inner())
}

/// Sets up a forcing (collective over `p`'s communicator, agreed by every
/// rank: forced everywhere, or nowhere).
fn make(p: &Private, f: LibraryChoice) -> Result<(Forcing, Option<Arc<Shared>>), String> {
    let on = |s: Arc<Shared>, per_call| {
        let comm = Some(s.comm().raw());
        Ok((Forcing { comm, per_call }, Some(s)))
    };
    match f {
        LibraryChoice::Tuned(t) => {
            let s = p.forced(f, |create| {
                let _g = forcing_lock();
                forcing::tuned::made_forced(t, true, create)
            })?;
            on(s, PerCall::None)
        }
        LibraryChoice::Adapt(a) => {
            let vars = adapt_vars(a);
            let ok = vars.as_ref().map(|_| ()).map_err(Clone::clone);
            let s = p.forced(f, |create| {
                let _g = forcing_lock();
                let (made, raised) = forcing::adapt::COMPONENT.raised(create);
                (made, ok.and(raised.map_err(|e| e.to_string())))
            })?;
            on(s, vars.unwrap_or(PerCall::None))
        }
        LibraryChoice::Mpich(m) => {
            let mine = mpich_vars(m);
            let all = super::private::min1(p.user(), u64::from(mine.is_ok()))?;
            match mine {
                Err(why) => Err(why),
                Ok(_) if all == 0 => Err("it could not be forced on another rank".into()),
                Ok(per_call) => Ok((
                    Forcing {
                        comm: None,
                        per_call,
                    },
                    None,
                )),
            }
        }
        LibraryChoice::Libnbc(_) | LibraryChoice::MpichIbcast(_) => Err(format!(
            "{f} is a nonblocking broadcast's algorithm; a table's bcast rules choose blocking ones"
        )),
    }
}

/// Why the table's coll/tuned rules run as colltune's own algorithms in
/// this process, where they do (see [`own_routes`]).
static OWN: OnceLock<String> = OnceLock::new();

/// From now on (set once, right after `MPI_Init`, and agreed by every rank
/// of `MPI_COMM_WORLD`), the table's rules that name one of coll/tuned's
/// algorithms run as colltune's algorithm of the same family
/// ([`twin`]) instead: where Open MPI cannot be told to run them on every
/// rank alike (dynamic rules off, or on some ranks only; turning them on
/// would wake settings the site left dormant), colltune's own route is the
/// one that moves the same bytes on every rank. `why` goes to the trace.
pub fn own_routes(why: String) {
    let _ = OWN.set(why);
}

/// Why the table's coll/tuned rules take colltune's own routes, if they do.
pub fn own_routes_reason() -> Option<&'static str> {
    OWN.get().map(String::as_str)
}

/// colltune's algorithm of the same family as coll/tuned's `f` (its
/// segment, and Open MPI's default k-nomial radix 4), blocking; binomial
/// where the family takes no such parameters.
pub fn twin(f: Forced) -> (AlgoSpec, Execution) {
    f.twin()
}

/// The twin of a coll/tuned choice other than Open MPI's own decision.
pub(crate) fn twin_of(lib: &LibraryChoice) -> Option<(AlgoSpec, Execution)> {
    match lib {
        LibraryChoice::Tuned(f) if !f.is_default() => Some(twin(*f)),
        _ => None,
    }
}

/// Why a per-call variable cannot be forced under `MPI_THREAD_MULTIPLE`.
fn threads(var: &str) -> Result<(), String> {
    if ffi::thread_multiple() {
        return Err(format!(
            "MPI runs with MPI_THREAD_MULTIPLE, and {var} is process-wide and read at every call: two threads' broadcasts could read each other's value and ranks run different algorithms"
        ));
    }
    Ok(())
}

/// coll/adapt's algorithm and segment for `a`, checked against what this
/// library offers and that `MPI_T` may write them.
fn adapt_vars(a: adapt::Forced) -> Result<PerCall, String> {
    threads(adapt::ALGORITHM)?;
    let offered = forcing::adapt::bcast_algorithms().map_err(|e| e.to_string())?;
    let Some(c) = offered.iter().find(|c| c.id == a.id) else {
        return Err(format!(
            "this library's {} has no value {}",
            adapt::ALGORITHM,
            a.id
        ));
    };
    if c.name != a.name() {
        return Err(format!(
            "this library's coll/adapt algorithm {} is {}, not {}",
            a.id,
            c.name,
            a.name()
        ));
    }
    let segment =
        c_int::try_from(a.segment).map_err(|_| format!("segment {}: too large", a.segment))?;
    let open = |n: &'static str| Cvar::open(n).map_err(|e| e.to_string());
    Ok(PerCall::Set([
        Some((open(adapt::ALGORITHM)?, a.id)),
        Some((open(adapt::SEGMENT)?, segment)),
    ]))
}

/// MPICH's broadcast algorithm variable and the value of `m`'s name in
/// this library, checked writable.
fn mpich_vars(m: mpich::Forced) -> Result<PerCall, String> {
    threads(mpich::BCAST_CVAR)?;
    let offered = forcing::mpich::bcast_algorithms().map_err(|e| e.to_string())?;
    let Some(c) = offered.all.iter().find(|c| c.name == m.name) else {
        return Err(format!(
            "this library's {} has no `{}` (it offers {})",
            mpich::BCAST_CVAR,
            m.name,
            offered
                .all
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    };
    let var = Cvar::open(mpich::BCAST_CVAR).map_err(|e| e.to_string())?;
    Ok(PerCall::Set([Some((var, c.value)), None]))
}

/// Prints a warning once per process and message, on rank 0 of the
/// communicator (`rank`).
fn warn_once(rank: usize, msg: &str) {
    static SEEN: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
    if rank == 0
        && SEEN
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(msg.to_string())
    {
        crate::say(&format!("warning: {msg}"));
    }
}
