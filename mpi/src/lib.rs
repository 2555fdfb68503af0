//! # colltune-mpi
//!
//! colltune on a live MPI library: the one crate that holds `unsafe` code
//! and raw MPI calls. [`transport`] executes the algorithms' schedules (and
//! checks every MPI return code); [`bench`] measures them; [`calibrate`]
//! measures the links the simulator's model is fitted to; [`verify`] checks
//! every byte; [`driver`] is the tuner's MPI oracle; [`select`] is the
//! runtime selector and [`runtime`] its C-facing side, shared by the
//! `libcolltune.so` and `LD_PRELOAD` libraries. [`emu`], the emulated
//! cluster's delay relay, lives here too: it is the other code that talks
//! to the operating system through raw calls.

pub use colltune_algorithms as algorithms;
pub use colltune_core as core;

pub mod abi;
pub mod bench;
#[cfg(feature = "tuner")]
pub mod calibrate;
#[cfg(feature = "tuner")]
pub mod driver;
pub mod emu;
pub mod forcing;
pub mod runtime;
pub mod select;
pub mod transport;
pub mod verify;

/// Writes `colltune: MSG` and its newline to stderr in one `write`: under
/// mpirun the ranks' stderr meet in one stream, and `eprintln!` writes a
/// line in pieces, so another rank's line (a trace, a warning) could land
/// inside it. Errors writing to stderr are ignored, as `eprintln!` cannot
/// report them either.
pub(crate) fn say(msg: &str) {
    use std::io::Write;
    let line = format!("colltune: {msg}\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}
