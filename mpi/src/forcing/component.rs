//! Forcing one of Open MPI's collective components and its choices through
//! `MPI_T`, as coll/adapt's and coll/han's baselines do.
//!
//! Open MPI picks a communicator's collective components when the
//! communicator is made, by priority. So the measurer raises the
//! component's priority variable through `MPI_T`, creates a communicator
//! of its communicator's ranks, and puts the priority back at once (the application's,
//! and colltune's, later communicators keep Open MPI's own choice). The
//! component's per-call variables (read at every call, process-wide) are
//! written before a point's first call, each read back, and the values
//! found before the first forced point written back after each point.

use crate::transport::mpi::control::CommHandle;
use crate::transport::mpi::{ffi, Comm, MpiError};

/// One component forced this way.
#[derive(Debug)]
pub(crate) struct Component {
    /// Its priority variable (`coll_adapt_priority`).
    pub priority: &'static str,
    /// The value that puts it above every other component.
    pub force_priority: i32,
    /// The variables a point writes, read per call (algorithm, segment).
    pub per_call: &'static [&'static str],
}

impl Component {
    /// Whether `MPI_T` lets this process write the priority and the
    /// per-call variables: each current value is read and written back.
    pub fn check_writable(&self) -> Result<(), MpiError> {
        for var in std::iter::once(&self.priority).chain(self.per_call) {
            ffi::cvar_read_int(var).and_then(|v| ffi::cvar_write_int(var, v))?;
        }
        Ok(())
    }

    /// A duplicate of `comm` (collective over it) this component serves,
    /// with the per-call variables as found now.
    pub fn force_on(&'static self, comm: &Comm) -> Result<Forced, MpiError> {
        let saved = self
            .per_call
            .iter()
            .map(|v| ffi::cvar_read_int(v))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Forced {
            component: self,
            comm: self.dup_raised(comm)?,
            saved,
        })
    }

    /// A private communicator of `comm`'s ranks (collective over it) made
    /// with the priority raised ([`Component::raised`]).
    pub fn dup_raised(&self, comm: &Comm) -> Result<CommHandle, MpiError> {
        let (made, raised) = self.raised(|| CommHandle::private_of(comm.raw()));
        let made = made?;
        raised?;
        Ok(made)
    }

    /// Runs `make` (the creation of a communicator) with the priority
    /// raised, which is put back at once. `make` runs whether or not the
    /// priority could be raised, so the collective calls match; the error
    /// says why the component may not serve what `make` made.
    pub fn raised<T>(&self, make: impl FnOnce() -> T) -> (T, Result<(), MpiError>) {
        let raised = ffi::cvar_read_int(self.priority)
            .and_then(|old| ffi::cvar_write_int(self.priority, self.force_priority).map(|()| old));
        let made = make();
        let back = match raised {
            Ok(old) => ffi::cvar_write_int(self.priority, old),
            Err(e) => Err(e),
        };
        (made, back)
    }
}

/// A communicator a forced component serves, and its per-call variables as
/// found before the first forced point.
#[derive(Debug)]
pub(crate) struct Forced {
    component: &'static Component,
    pub comm: CommHandle,
    saved: Vec<i32>,
}

impl Forced {
    /// Writes the per-call variables (in [`Component::per_call`]'s order;
    /// None: as found before the first point), and reads each back.
    pub fn write(&self, values: &[Option<i32>]) -> Result<(), MpiError> {
        for ((var, value), saved) in self.component.per_call.iter().zip(values).zip(&self.saved) {
            let value = value.unwrap_or(*saved);
            ffi::cvar_write_int(var, value)?;
            let back = ffi::cvar_read_int(var)?;
            if back != value {
                return Err(MpiError {
                    call: "MPI_T_cvar_read",
                    code: -1,
                    message: format!("{var}: wrote {value}, read back {back}"),
                });
            }
        }
        Ok(())
    }

    /// Writes back the values found before the first forced point.
    pub fn restore(&self) -> Result<(), MpiError> {
        for (var, value) in self.component.per_call.iter().zip(&self.saved) {
            ffi::cvar_write_int(var, *value)?;
        }
        Ok(())
    }
}
