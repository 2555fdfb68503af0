//! The control plane: the small collectives colltune itself runs around the
//! collectives it measures and executes (agreeing on plans and settings,
//! timing repetitions, gathering reports), safe, on any communicator it
//! owns (a [`Comm`](super::Comm), or inside this crate a bare owned handle:
//! a forced-algorithm duplicate, a split being set up).
//!
//! One generic reduction serves every element type and operation:
//! `comm.allreduce(t, Op::Max)` on an `f64`, `comm.allreduce(n, Op::Sum)` on
//! a `u64`. Everything goes through `ffi`, so every return
//! code is checked.

use std::ffi::c_void;
use std::ptr;

use super::ffi::{self, Datatype, MPI_Comm};
use super::{MpiError, Op};

mod sealed {
    use super::{Datatype, MPI_Comm};

    /// The MPI datatype of an element type.
    pub trait Typed: Copy + Default {
        const DATATYPE: Datatype;
    }

    /// The raw handle of a communicator colltune owns.
    pub trait Raw {
        fn raw_handle(&self) -> MPI_Comm;
    }
}

pub(crate) use sealed::Raw;

/// The element types the control plane moves: `u8`, `i32`, `u64`, `f64`.
pub trait Element: sealed::Typed {}

macro_rules! element {
    ($($t:ty => $d:ident),*) => {$(
        impl sealed::Typed for $t {
            const DATATYPE: Datatype = Datatype::$d;
        }
        impl Element for $t {}
    )*};
}
element!(u8 => U8, i32 => I32, u64 => U64, f64 => F64);

/// An owned communicator without colltune's extras (no node map, no
/// window): a duplicate or a split, freed on drop; [`Control`] gives it
/// the control plane.
#[derive(Debug)]
pub(crate) struct CommHandle {
    raw: MPI_Comm,
}

impl CommHandle {
    /// Takes ownership of `raw`.
    ///
    /// # Safety
    /// `raw` is a valid communicator that nothing else frees.
    pub(crate) unsafe fn own(raw: MPI_Comm) -> CommHandle {
        CommHandle { raw }
    }

    /// A private communicator of `comm`'s ranks whose errors return codes
    /// instead of aborting (collective over `comm`; `MPI_Comm_split`, not a
    /// duplicate: no attribute of `comm` is copied).
    pub(crate) fn private_of(comm: MPI_Comm) -> Result<CommHandle, MpiError> {
        Self::private_from(comm, comm)
    }

    /// As [`CommHandle::private_of`], made on `parent` (a communicator
    /// holding every rank of `of`; its error handler hears of a failure).
    pub(crate) fn private_from(parent: MPI_Comm, of: MPI_Comm) -> Result<CommHandle, MpiError> {
        Ok(CommHandle {
            raw: ffi::comm_private(parent, of)?,
        })
    }

    pub(crate) fn raw(&self) -> MPI_Comm {
        self.raw
    }

    /// Frees the communicator now, reporting a failure (dropping it
    /// ignores one).
    pub(crate) fn free(mut self) -> Result<(), MpiError> {
        let r = ffi::comm_free(&mut self.raw);
        std::mem::forget(self);
        r
    }
}

impl Drop for CommHandle {
    fn drop(&mut self) {
        if !ffi::finalized() {
            let _ = ffi::comm_free(&mut self.raw);
        }
    }
}

impl sealed::Raw for CommHandle {
    fn raw_handle(&self) -> MPI_Comm {
        self.raw
    }
}

impl Control for CommHandle {}

/// The control plane of a communicator: collective calls, so every rank of
/// it makes the same ones in the same order.
pub trait Control: sealed::Raw {
    /// `MPI_Barrier`.
    fn barrier(&self) -> Result<(), MpiError> {
        ffi::barrier(self.raw_handle())
    }

    /// `v` reduced over all ranks with `op`, on every rank.
    fn allreduce<T: Element>(&self, v: T, op: Op) -> Result<T, MpiError> {
        let mut out = T::default();
        // SAFETY: one element in, one out.
        unsafe {
            ffi::allreduce(
                (&v as *const T).cast(),
                (&mut out as *mut T).cast(),
                1,
                T::DATATYPE,
                op,
                self.raw_handle(),
            )?
        };
        Ok(out)
    }

    /// `v` reduced element-wise over all ranks with `op`, at `root` (empty
    /// elsewhere).
    fn reduce<T: Element>(&self, v: &[T], op: Op, root: usize) -> Result<Vec<T>, MpiError> {
        let comm = self.raw_handle();
        let at_root = ffi::comm_rank(comm)? == root;
        let mut out = if at_root {
            vec![T::default(); v.len()]
        } else {
            Vec::new()
        };
        // SAFETY: v.len() elements in; as many out at the root.
        unsafe {
            ffi::reduce(
                v.as_ptr().cast(),
                if at_root {
                    out.as_mut_ptr().cast()
                } else {
                    ptr::null_mut()
                },
                v.len() as u64,
                T::DATATYPE,
                op,
                root,
                comm,
            )?
        };
        Ok(out)
    }

    /// `v` from every rank, in rank order, on every rank.
    fn allgather<T: Element>(&self, v: T) -> Result<Vec<T>, MpiError> {
        let comm = self.raw_handle();
        let mut out = vec![T::default(); ffi::comm_size(comm)?];
        // SAFETY: one element in, one per rank out.
        unsafe {
            ffi::allgather(
                (&v as *const T).cast(),
                out.as_mut_ptr().cast(),
                1,
                T::DATATYPE,
                comm,
            )?
        };
        Ok(out)
    }

    /// `v` from every rank (equal lengths), concatenated in rank order at
    /// `root` (empty elsewhere).
    fn gather<T: Element>(&self, v: &[T], root: usize) -> Result<Vec<T>, MpiError> {
        let comm = self.raw_handle();
        let size = ffi::comm_size(comm)?;
        let mut out = if ffi::comm_rank(comm)? == root {
            vec![T::default(); v.len() * size]
        } else {
            Vec::new()
        };
        // SAFETY: out holds size * v.len() elements at the root; unused elsewhere.
        unsafe {
            ffi::gather(
                v.as_ptr().cast(),
                out.as_mut_ptr().cast(),
                v.len() as u64,
                T::DATATYPE,
                root,
                comm,
            )?
        };
        Ok(out)
    }

    /// `root`'s `v`, on every rank.
    fn bcast<T: Element>(&self, v: T, root: usize) -> Result<T, MpiError> {
        let mut x = v;
        if ffi::p2p_bcasts() {
            // SAFETY: one element, in place, as bytes.
            unsafe {
                ffi::tree_bcast(
                    (&mut x as *mut T).cast(),
                    std::mem::size_of::<T>() as u64,
                    root,
                    self.raw_handle(),
                )?
            };
            return Ok(x);
        }
        // SAFETY: one element, in place.
        unsafe {
            ffi::bcast(
                (&mut x as *mut T).cast::<c_void>(),
                1,
                T::DATATYPE,
                root,
                self.raw_handle(),
            )?
        };
        Ok(x)
    }

    /// `root`'s byte string (any length), on every rank.
    fn bcast_bytes(&self, data: &[u8], root: usize) -> Result<Vec<u8>, MpiError> {
        let comm = self.raw_handle();
        let len = self.bcast(data.len() as u64, root)?;
        let mut buf = if ffi::comm_rank(comm)? == root {
            data.to_vec()
        } else {
            vec![0u8; len as usize]
        };
        if len > 0 && ffi::p2p_bcasts() {
            // SAFETY: buf holds len bytes.
            unsafe { ffi::tree_bcast(buf.as_mut_ptr(), len, root, comm)? };
        } else if len > 0 {
            self.library_bcast(&mut buf, root)?;
        }
        Ok(buf)
    }

    /// The MPI library's own broadcast of `buf` from `root` (`PMPI_Bcast`,
    /// so an interposition library never calls itself).
    fn library_bcast(&self, buf: &mut [u8], root: usize) -> Result<(), MpiError> {
        // SAFETY: buf holds buf.len() bytes, borrowed for the call.
        unsafe { ffi::library_bcast(buf.as_mut_ptr(), buf.len() as u64, root, self.raw_handle()) }
    }

    /// `MPI_Bcast` through its `MPI_` symbol, as an application calls it:
    /// a PMPI tool loaded in the process (colltune's drop-in under
    /// `LD_PRELOAD`) intercepts it. For `bench --baseline interposed`.
    fn interposed_bcast(&self, buf: &mut [u8], root: usize) -> Result<(), MpiError> {
        // SAFETY: as in library_bcast.
        unsafe {
            ffi::interposed_bcast(buf.as_mut_ptr(), buf.len() as u64, root, self.raw_handle())
        }
    }
}
