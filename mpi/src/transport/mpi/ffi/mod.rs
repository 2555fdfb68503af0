//! Checked raw MPI calls: every return code becomes a `Result`, and
//! nothing more (the safe layers are [`control`](super::control),
//! [`p2p`](super::p2p) and [`exec`](super::exec)).
//!
//! rsmpi has no dynamic request sets over borrowed sub-ranges of one buffer,
//! no `MPI_Rsend`, no one-sided windows, and it ignores return codes; the
//! executors need all four, so they call MPI here. Communicators used through
//! this module carry `MPI_ERRORS_RETURN`, so failures come back as codes.
//! Crate-private: nothing outside colltune-mpi calls MPI raw.
//!
//! Every call goes to the MPI library's profiling entry points (`PMPI_`):
//! what colltune sends, receives and sets up for itself is not the
//! application's traffic, so a profiling tool (which defines the `MPI_`
//! names) never counts it, and the interposition library never calls
//! itself. The last section holds what the C-facing layer
//! ([`runtime`](crate::runtime)) needs: the user's own call passed to the library
//! unchanged, datatype inspection, packing, attributes, error handlers,
//! Fortran handles.

use std::ffi::{c_int, c_void};
use std::ptr;

use mpi::ffi;
pub use mpi::ffi::{MPI_Comm, MPI_Group, MPI_Request, MPI_Win};

use colltune_algorithms::SendMode;

use super::{MpiError, Op};

/// Turns an MPI return code into a `Result` naming the call. The success
/// test is inlined at every call site (one compare; it was a call of 22
/// instructions, four per root of a linear broadcast: issue 28), the
/// error's message built out of line.
#[inline]
pub fn check(code: c_int, call: &'static str) -> Result<(), MpiError> {
    if code == ffi::MPI_SUCCESS as c_int {
        return Ok(());
    }
    Err(error(code, call))
}

/// The error of a failed MPI call: its code, the call and the library's
/// message for the code.
#[cold]
#[inline(never)]
fn error(code: c_int, call: &'static str) -> MpiError {
    let mut buf = vec![0u8; ffi::MPI_MAX_ERROR_STRING as usize + 1];
    let mut len: c_int = 0;
    // SAFETY: buf holds MPI_MAX_ERROR_STRING bytes as MPI_Error_string requires.
    let rc = unsafe { ffi::PMPI_Error_string(code, buf.as_mut_ptr().cast(), &mut len) };
    let message = if rc == ffi::MPI_SUCCESS as c_int {
        String::from_utf8_lossy(&buf[..len.max(0) as usize]).into_owned()
    } else {
        format!("error code {code}")
    };
    MpiError {
        call,
        code,
        message,
    }
}

fn byte() -> ffi::MPI_Datatype {
    // SAFETY: reading an immutable MPI handle exported by the MPI library.
    unsafe { ffi::RSMPI_UINT8_T }
}

/// A buffer pointer MPI can take. Rust's empty slices point at address 1,
/// which is Open MPI's `MPI_IN_PLACE`: for zero bytes, point at a real byte.
fn buf_ptr<T>(p: *const T, len: u64) -> *mut c_void {
    static EMPTY: [u8; 8] = [0; 8];
    if len == 0 {
        EMPTY.as_ptr() as *mut c_void
    } else {
        p as *mut c_void
    }
}

fn count(len: u64) -> Result<c_int, MpiError> {
    c_int::try_from(len).map_err(|_| MpiError {
        call: "count",
        code: -1,
        message: format!("{len} bytes exceed one MPI message (2^31 - 1 bytes)"),
    })
}

pub fn comm_world() -> MPI_Comm {
    // SAFETY: reading an immutable MPI handle.
    unsafe { ffi::RSMPI_COMM_WORLD }
}

pub fn comm_self() -> MPI_Comm {
    // SAFETY: reading an immutable MPI handle.
    unsafe { ffi::RSMPI_COMM_SELF }
}

pub fn comm_null() -> MPI_Comm {
    // SAFETY: reading an immutable MPI handle.
    unsafe { ffi::RSMPI_COMM_NULL }
}

pub fn request_null() -> MPI_Request {
    // SAFETY: reading an immutable MPI handle.
    unsafe { ffi::RSMPI_REQUEST_NULL }
}

pub fn win_null() -> MPI_Win {
    // SAFETY: reading an immutable MPI handle.
    unsafe { ffi::RSMPI_WIN_NULL }
}

/// This process's rank in `MPI_COMM_WORLD` where the world model is up
/// (between `MPI_Init` and `MPI_Finalize`); None otherwise (a program of
/// MPI 4 sessions alone may not use `MPI_COMM_WORLD`). For messages.
pub fn world_rank() -> Option<usize> {
    (initialized() && !finalized())
        .then(|| comm_rank(comm_world()).ok())
        .flatten()
}

pub fn initialized() -> bool {
    let mut flag: c_int = 0;
    // SAFETY: MPI_Initialized may be called at any time.
    unsafe { ffi::PMPI_Initialized(&mut flag) };
    flag != 0
}

pub fn finalized() -> bool {
    let mut flag: c_int = 0;
    // SAFETY: MPI_Finalized may be called at any time.
    unsafe { ffi::PMPI_Finalized(&mut flag) };
    flag != 0
}

pub fn wtime() -> f64 {
    // SAFETY: no arguments.
    unsafe { ffi::PMPI_Wtime() }
}

mod bcast;
mod coll;
mod comm;
mod mpit;
mod p2p;
mod rma;
mod user;

pub use bcast::*;
pub use coll::*;
pub use comm::*;
pub use mpit::*;
pub use p2p::*;
pub use rma::*;
pub use user::*;
