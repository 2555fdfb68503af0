//! The library's nonblocking (`MPI_Ibcast`) and persistent
//! (`MPI_Bcast_init`) broadcasts measured ([`Subject::LibraryCall`]), each
//! under one of the library's nonblocking algorithms forced around the call
//! that builds its schedule ([`crate::forcing::nonblocking`]), in two call
//! patterns per point:
//!
//! ```text
//! (a) post ── wait                           time to completion t_a (samples, overlap_us 0)
//! (b) post ── compute(median t_a) ── wait    t_b (samples, overlap_us = median t_a,
//!                                              overlap = 1 - (t_b - t_compute) / median t_a)
//! ```
//!
//! `post` is `PMPI_Ibcast`, or for `bcast_init` `PMPI_Start` on a request
//! made once per point and root before any timing (`PMPI_Bcast_init`, or
//! Open MPI 4.1's `PMPIX_Bcast_init`, found at run time; where the library
//! has neither, the subject is unavailable with a message saying so) and
//! freed after it. Every byte of each root's first call is checked on
//! every rank before the timing. Repetitions, synchronisation and the
//! slowest-rank reduction are the benchmark's ([`Measurer::time`]).
//!
//! Cost: two timed phases per point (the second one's computation is the
//! first one's median, so a point takes about three times a blocking
//! one's). A persistent request binds one buffer: `bcast_init` keeps one
//! buffer per root whatever the cache mode.

use std::cell::Cell;
use std::ffi::{c_int, c_void};

use mpi::ffi as raw;

use super::{compute, BenchError, Measurer, Point};
use crate::forcing::nonblocking::{forcing, NbForcing};
use crate::transport::mpi::ffi::{check, request_null};
use crate::transport::mpi::{Control, MpiError, Op};
use colltune_core::libraries::library::LibraryChoice;
use colltune_core::measure::method::{Pattern, RootPolicy};
use colltune_core::measure::record::{overlap_achieved, Call, Sample};
use colltune_core::measure::stats;

/// `MPI_Bcast_init`'s signature (MPI 4; Open MPI 4.1's `MPIX_Bcast_init`
/// has the same).
type BcastInit = unsafe extern "C" fn(
    *mut c_void,
    c_int,
    raw::MPI_Datatype,
    c_int,
    raw::MPI_Comm,
    raw::MPI_Info,
    *mut raw::MPI_Request,
) -> c_int;

/// The library's persistent broadcast, through its profiling symbol:
/// `PMPI_Bcast_init` (MPI 4), else `PMPIX_Bcast_init` (Open MPI 4.1's
/// pcollreq extension); None where it has neither.
pub fn bcast_init_symbol() -> Option<(BcastInit, &'static str)> {
    for (name, call) in [
        (c"PMPI_Bcast_init", "MPI_Bcast_init"),
        (c"PMPIX_Bcast_init", "MPIX_Bcast_init"),
    ] {
        // SAFETY: dlsym with a NUL-terminated name in the global scope.
        let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
        if !p.is_null() {
            // SAFETY: both symbols have MPI 4's `MPI_Bcast_init` signature.
            return Some((
                unsafe { std::mem::transmute::<*mut c_void, BcastInit>(p) },
                call,
            ));
        }
    }
    None
}

/// Persistent requests, freed when dropped.
struct Persistent(Vec<raw::MPI_Request>);

impl Drop for Persistent {
    fn drop(&mut self) {
        for r in &mut self.0 {
            if *r != request_null() {
                // SAFETY: an inactive persistent request this owns.
                unsafe { raw::PMPI_Request_free(r) };
            }
        }
    }
}

/// One call's way to post and complete a broadcast on this communicator.
struct Caller {
    comm: raw::MPI_Comm,
    forced: NbForcing,
    persistent: Option<Persistent>,
}

fn count(n: usize) -> Result<c_int, MpiError> {
    c_int::try_from(n).map_err(|_| MpiError {
        call: "count",
        code: -1,
        message: format!("{n} bytes exceed one MPI message (2^31 - 1 bytes)"),
    })
}

fn byte() -> raw::MPI_Datatype {
    // SAFETY: reading an immutable MPI handle exported by the MPI library.
    unsafe { raw::RSMPI_UINT8_T }
}

impl Caller {
    /// Posts root index `i`'s broadcast of `buf` and waits for it, with
    /// `us` microseconds of computation between.
    fn call(&mut self, i: usize, root: usize, buf: &mut [u8], us: f64) -> Result<(), MpiError> {
        let mut own = request_null();
        let req = match self.persistent.as_mut() {
            Some(p) => {
                // SAFETY: an inactive persistent request made on `buf`.
                check(unsafe { raw::PMPI_Start(&mut p.0[i]) }, "MPI_Start")?;
                &mut p.0[i]
            }
            None => {
                let (comm, n) = (self.comm, count(buf.len())?);
                let ptr = buf.as_mut_ptr().cast::<c_void>();
                // SAFETY: `buf` is n bytes, valid until the wait below.
                self.forced.run(|| {
                    check(
                        unsafe { raw::PMPI_Ibcast(ptr, n, byte(), root as c_int, comm, &mut own) },
                        "MPI_Ibcast",
                    )
                })?;
                &mut own
            }
        };
        compute(us);
        // SAFETY: an active request; the status is ignored.
        check(
            unsafe { raw::PMPI_Wait(req, raw::RSMPI_STATUS_IGNORE) },
            "MPI_Wait",
        )
    }
}

/// The byte of position `i` a broadcast from `root` carries.
fn pattern(i: usize, root: usize) -> u8 {
    (i.wrapping_mul(31) ^ root.wrapping_mul(7)).wrapping_add(1) as u8
}

impl Measurer<'_> {
    /// Times `call` under `choice` at one point (both patterns above); rank
    /// 0 gets the samples.
    pub(super) fn measure_call(
        &mut self,
        pt: &Point,
        run: u32,
        call: Call,
        choice: LibraryChoice,
    ) -> Result<Vec<Sample>, BenchError> {
        self.check(pt)?;
        let forced = forcing(choice).map_err(BenchError::Unavailable)?;
        let (rank, size) = (self.comm.rank(), self.comm.size());
        let roots: Vec<usize> = match self.method.root {
            RootPolicy::Fixed(r) => vec![r.min(size - 1)],
            RootPolicy::Rotate => (0..size).collect(),
        };
        let n = usize::try_from(pt.bytes).map_err(|_| BenchError::Invalid("size".into()))?;
        let mut bufs: Vec<Vec<u8>> = roots.iter().map(|_| vec![0u8; n]).collect();
        let comm = self.comm.raw();
        let persistent = match call {
            Call::Bcast => {
                return Err(BenchError::Invalid(
                    "the blocking broadcast is measured as the other subjects are".into(),
                ))
            }
            Call::Ibcast => None,
            Call::BcastInit => Some(make_persistent(comm, forced, &roots, &mut bufs)?),
        };
        let mut caller = Caller {
            comm,
            forced,
            persistent,
        };
        // Every byte of each root's first call, on every rank.
        let mut bad = 0.0f64;
        for (i, (&root, buf)) in roots.iter().zip(bufs.iter_mut()).enumerate() {
            for (k, b) in buf.iter_mut().enumerate() {
                *b = if rank == root { pattern(k, root) } else { 0 };
            }
            caller.call(i, root, buf, 0.0)?;
            if buf.iter().enumerate().any(|(k, &b)| b != pattern(k, root)) {
                bad = 1.0;
            }
        }
        let ctl = self.comm.handle();
        if ctl.allreduce(bad, Op::Max)? > 0.0 {
            return Err(BenchError::Invalid(format!(
                "{} delivered wrong bytes at {} bytes on {size} ranks",
                pt.subject.label(),
                pt.bytes
            )));
        }
        let us = Cell::new(0.0f64);
        let nroots = roots.len();
        let mut calls = |first: usize, count: u32, rotate: bool| -> Result<(), BenchError> {
            for j in 0..count as usize {
                let i = if rotate {
                    (first + j) % nroots
                } else {
                    first % nroots
                };
                caller.call(i, roots[i], &mut bufs[i], us.get())?;
            }
            Ok(())
        };
        let (op, scale) = match self.method.pattern {
            Pattern::Imb => (Op::Sum, 1.0 / size as f64),
            _ => (Op::Max, 1.0),
        };
        // (a) post then wait.
        let alone = self.time(pt, ctl, nroots, &mut calls)?;
        // Rank 0 gets every repetition's time (then the late flags).
        let mut all_a = ctl.reduce(&alone.local, op, 0)?;
        let t_pure = if rank == 0 {
            all_a[..alone.reps].iter_mut().for_each(|t| *t *= scale);
            stats::median(&all_a[..alone.reps])
        } else {
            0.0
        };
        let t_pure = f64::from_bits(ctl.bcast(t_pure.to_bits(), 0)?);
        // (b) post, compute for the call's own time, wait.
        us.set(t_pure);
        let with = Point {
            overlap_us: t_pure,
            ..pt.clone()
        };
        let timed = self.time(&with, ctl, nroots, &mut calls)?;
        let mut all_b = ctl.reduce(&timed.local, op, 0)?;
        if rank != 0 {
            return Ok(Vec::new());
        }
        all_b[..timed.reps].iter_mut().for_each(|t| *t *= scale);
        let mut out = self.samples(pt, run, &roots, alone.per_call_rep, &all_a);
        let mut b = self.samples(&with, run, &roots, timed.per_call_rep, &all_b);
        for s in &mut b {
            s.overlap =
                overlap_achieved(t_pure, t_pure, s.time_us).map(|o| (o * 1e4).round() / 1e4);
        }
        out.extend(b);
        Ok(out)
    }
}

/// Each root's persistent request on its buffer, made with `forced`
/// written (the schedule is built then).
fn make_persistent(
    comm: raw::MPI_Comm,
    forced: NbForcing,
    roots: &[usize],
    bufs: &mut [Vec<u8>],
) -> Result<Persistent, BenchError> {
    let Some((init, name)) = bcast_init_symbol() else {
        return Err(BenchError::Unavailable(
            "this MPI library has neither MPI_Bcast_init (MPI 4) nor MPIX_Bcast_init (Open MPI 4.1's pcollreq extension): bcast_init is not measured".into(),
        ));
    };
    let mut made = Persistent(Vec::with_capacity(roots.len()));
    for (&root, buf) in roots.iter().zip(bufs.iter_mut()) {
        let mut req = request_null();
        let n = count(buf.len())?;
        let ptr = buf.as_mut_ptr().cast::<c_void>();
        forced.run(|| {
            // SAFETY: `buf` lives (unmoved) as long as the request; the
            // request is freed before it (`Persistent` is dropped first).
            check(
                unsafe {
                    init(
                        ptr,
                        n,
                        byte(),
                        root as c_int,
                        comm,
                        raw::RSMPI_INFO_NULL,
                        &mut req,
                    )
                },
                name,
            )
        })?;
        made.0.push(req);
    }
    Ok(made)
}
