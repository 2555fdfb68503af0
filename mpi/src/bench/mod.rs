//! Measuring algorithms the way IMB and OSU do, with raw samples kept.
//!
//! Methodology (also in the README):
//! - **Warm-up**: `warmup` untimed calls per point.
//! - **Repetitions** sized by a per-point time budget: a short probe times a
//!   synchronised call (barrier included) and the repetition count is the
//!   budget divided by that, clamped to `[min_reps, max_reps]`; every rank
//!   computes the same count from the probe's slowest-rank time.
//! - **Each repetition starts synchronised** and its time is the **slowest
//!   rank's** (an element-wise `MPI_Reduce(MAX)` after the run). Two ways
//!   ([`SyncMode`]): `MPI_Barrier` before each repetition, each rank timing from
//!   leaving it (IMB, OSU; ranks leave a barrier at different times, which
//!   the times include), or window synchronisation (SKaMPI, ReproMPI):
//!   clocks are synchronised to rank 0's, repetition k starts on every rank
//!   at one agreed instant and its time runs from that instant to the end of
//!   the call; a rank that reaches the instant late flags the repetition as
//!   an outlier.
//! - **What runs**: a colltune broadcast whose tree fits one segment
//!   (linear, binomial, k-nomial, binary, chain, pipeline; no overlap) is
//!   timed through the selector's direct path ([`crate::select::direct`]),
//!   plain sends and receives, because that is what the runtime runs for
//!   it in either execution; everything else through the executors.
//! - **Several independent runs** (default 3), interleaved: run 1 of every
//!   point, then run 2, ..., so slow drifts of the machine hit every
//!   algorithm alike.
//! - **Root**: rotating (repetition i uses root i mod p, as IMB-MPI1 did
//!   before 2019) or fixed (IMB 2019 and later and OSU: root 0).
//! - **Cache**: warm (one buffer) or off (buffers rotated over a region twice
//!   the last-level cache).
//! - **Overlap**: optional computation between starting a call and waiting
//!   for it; `iterations` calls per repetition (time reported per call).
//! - **Pattern** ([`Pattern`]): `synchronized` times each repetition's
//!   call(s) from a common start (above); `back-to-back` makes a repetition
//!   one block of calls in a row after the common start (IMB's `-sync 0`): each
//!   rank times the whole block, its time per call is the block's time over
//!   the calls, and the sample is the slowest rank's. The root rotates per
//!   call (call j of repetition i from root (i + j) mod p) and a block is a
//!   whole number of rotations, sized from the probe to about a tenth of the
//!   budget, at most 1000 calls ([`block_calls`]); `iterations` records the
//!   block's calls. `imb` is IMB-MPI1's own measurement (2019 and later,
//!   default `-sync 1`; OSU's is the same): a barrier before each call,
//!   each rank timing only its own call, and the sample the **mean over
//!   the ranks** (IMB's `t_avg`) where the other patterns take the slowest
//!   rank; it needs barrier synchronisation.

pub use crate::forcing::{adapt, han, library_short, mpich};
pub mod clock;
mod nonblocking;
mod outcome;

pub use nonblocking::bcast_init_symbol;

pub use outcome::{Outcome, Skips};

use colltune_algorithms::{build_resolved, Collective, Plan, Shape};
use thiserror::Error;

use crate::transport::mpi::control::CommHandle;
use crate::transport::mpi::{ffi, start, Buffers, Comm, Control, MpiError, Op, TransportError};
use colltune_core::measure::method::{
    block_calls, CacheMode, Method, Origin, Pattern, RootPolicy, Subject, SyncMode,
};
use colltune_core::measure::record::Sample;
use colltune_core::measure::stats;

/// One point: a subject at a size, with calls per repetition and overlap.
#[derive(Clone, Debug)]
pub struct Point<'s> {
    pub subject: &'s Subject,
    pub bytes: u64,
    pub iterations: u32,
    pub overlap_us: f64,
}

#[derive(Debug, Error)]
pub enum BenchError {
    #[error(transparent)]
    Transport(#[from] TransportError),
    #[error(transparent)]
    Mpi(#[from] MpiError),
    #[error("{0}")]
    Invalid(String),
    /// The algorithm cannot run with this MPI and network (an MPI library
    /// without one-sided support between these nodes, say). Collective: every
    /// rank of the communicator gets it.
    #[error("not available here: {0}")]
    Unavailable(String),
    /// The library cannot apply a forced algorithm to this point (MPICH's
    /// collective fallback check failed): nothing was timed. Collective.
    #[error("not applicable: {0}")]
    NotApplicable(String),
}

impl BenchError {
    pub fn is_unavailable(&self) -> bool {
        matches!(self, BenchError::Unavailable(_))
    }
    pub fn is_not_applicable(&self) -> bool {
        matches!(self, BenchError::NotApplicable(_))
    }
}

pub use colltune_core::measure::method::MAX_BYTES;

/// The last-level cache of this machine in bytes (sysfs), or 32 MiB.
pub fn llc_bytes() -> u64 {
    let mut best = (0u32, 32u64 << 20);
    for i in 0..8 {
        let dir = format!("/sys/devices/system/cpu/cpu0/cache/index{i}");
        let level = std::fs::read_to_string(format!("{dir}/level"))
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok());
        let size = std::fs::read_to_string(format!("{dir}/size"))
            .ok()
            .and_then(|s| colltune_algorithms::parse_size(s.trim()).ok());
        if let (Some(l), Some(s)) = (level, size) {
            if l >= best.0 {
                best = (l, s);
            }
        }
    }
    best.1
}

/// A pool of buffers that either reuses one slot (warm cache) or rotates
/// slots across a region larger than the last-level cache.
struct Pool {
    region: Vec<u8>,
    step: usize,
    slots: usize,
}

impl Pool {
    fn new(bytes: u64, cache: CacheMode) -> Pool {
        let n = bytes as usize;
        let step = n.div_ceil(64).max(1) * 64;
        let slots = match cache {
            CacheMode::Warm => 1,
            CacheMode::Off(region) => (region as usize / step).clamp(2, 1 << 16),
        };
        Pool {
            region: vec![0u8; step * slots],
            step,
            slots,
        }
    }
    fn slot(&mut self, i: usize, len: usize) -> &mut [u8] {
        let at = (i % self.slots) * self.step;
        &mut self.region[at..at + len]
    }
}

/// Busy computation for `us` microseconds (the "work" overlapped with a call).
fn compute(us: f64) {
    if us <= 0.0 {
        return;
    }
    let end = ffi::wtime() + us * 1e-6;
    while ffi::wtime() < end {
        std::hint::spin_loop();
    }
}

/// An Open MPI component a subject forces through `MPI_T` (`forcing`).
#[derive(Clone, Copy, Debug)]
enum Forcing {
    Adapt,
    Han,
}

/// Measures points on one communicator.
pub struct Measurer<'c> {
    comm: &'c Comm,
    pub method: Method,
    prov: Origin,
    /// Communicators for forced Open MPI algorithms, by subject label.
    tuned_comms: Vec<(String, CommHandle)>,
    /// MPICH's variables as found before the first forced MPICH point.
    mpich_saved: Option<mpich::Saved>,
    /// The communicators Open MPI's coll/adapt and coll/han serve (each
    /// made at its first point), and their variables as found before it.
    adapt: Option<crate::forcing::component::Forced>,
    han: Option<crate::forcing::component::Forced>,
}

impl<'c> Measurer<'c> {
    /// A measurer; samples say how their repetitions were synchronised
    /// (`source`: `measured` or `measured:window`).
    pub fn new(comm: &'c Comm, method: Method, mut prov: Origin) -> Self {
        if prov.source == SyncMode::Barrier.source() {
            prov.source = method.sync.source().into();
        }
        Measurer {
            comm,
            method,
            prov,
            tuned_comms: Vec::new(),
            mpich_saved: None,
            adapt: None,
            han: None,
        }
    }

    pub fn comm(&self) -> &Comm {
        self.comm
    }

    /// Makes the communicator a forced Open MPI algorithm runs on, once:
    /// created with the variables written (`forcing::tuned`, as the
    /// runtime does), which are written back after.
    fn make_tuned_comm(&mut self, s: &Subject) -> Result<(), BenchError> {
        let Subject::OmpiTuned { tuned, segment } = s else {
            return Ok(());
        };
        let key = s.label();
        if self.tuned_comms.iter().any(|(k, _)| *k == key) {
            return Ok(());
        }
        let f = colltune_core::libraries::ompi::Forced {
            id: tuned.id,
            segment: u32::try_from(*segment).unwrap_or(u32::MAX),
        };
        let (c, forced) = crate::forcing::tuned::made_forced(f, false, || {
            CommHandle::private_of(self.comm.raw())
        });
        let c = c?;
        forced.map_err(BenchError::Unavailable)?;
        self.tuned_comms.push((key, c));
        Ok(())
    }

    /// The communicator subject `s` is timed on: its own for a forced Open
    /// MPI algorithm (made by `make_tuned_comm`), else the measurer's.
    fn comm_for(&self, s: &Subject) -> &CommHandle {
        match s {
            Subject::OmpiTuned { .. } => self
                .tuned_comms
                .iter()
                .find(|(k, _)| *k == s.label())
                .map(|(_, c)| c)
                .expect("made by make_tuned_comm"),
            Subject::OmpiAdapt { .. } => &self.adapt.as_ref().expect("made by force").comm,
            Subject::OmpiHan { .. } => &self.han.as_ref().expect("made by force").comm,
            _ => self.comm.handle(),
        }
    }

    /// Forces a coll/adapt or coll/han choice for a point: makes the
    /// communicator the component serves at its first point (collective; a
    /// library that will not let `MPI_T` raise its priority makes the
    /// subject unavailable, on every rank alike), then writes the
    /// algorithm and segment (read per call; a segment of None: as found).
    /// Returns which component to put back after the point.
    fn force(
        &mut self,
        component: Forcing,
        id: i32,
        segment: Option<u64>,
    ) -> Result<Forcing, BenchError> {
        let (c, slot, what) = match component {
            Forcing::Adapt => (&adapt::COMPONENT, &mut self.adapt, "coll/adapt"),
            Forcing::Han => (&han::COMPONENT, &mut self.han, "coll/han"),
        };
        let segment = segment
            .map(|s| {
                i32::try_from(s).map_err(|_| {
                    BenchError::Invalid(format!(
                        "{what} segment {s}: Open MPI takes at most 2^31 - 1 bytes"
                    ))
                })
            })
            .transpose()?;
        if slot.is_none() {
            *slot = Some(
                c.force_on(self.comm)
                    .map_err(|e| BenchError::Unavailable(format!("{what}: {e}")))?,
            );
        }
        let forced = slot.as_ref().expect("made above");
        if let Err(e) = forced.write(&[Some(id), segment]) {
            // Half written: leave none of it behind.
            let _ = forced.restore();
            return Err(e.into());
        }
        Ok(component)
    }

    /// Forces MPICH's broadcast algorithm `choice` (process-wide, read per
    /// call) and checks, with one call under MPICH's `error` fallback, that
    /// MPICH can apply it to this point; returns the value to put back.
    fn force_mpich(
        &mut self,
        choice: &colltune_core::libraries::mpich::Choice,
        bytes: u64,
    ) -> Result<i32, BenchError> {
        let saved = match self.mpich_saved {
            Some(s) => s,
            None => {
                let s = mpich::Saved::read()?;
                self.mpich_saved = Some(s);
                s
            }
        };
        if let Err(e) = mpich::write_algorithm(choice.value) {
            let _ = mpich::write_algorithm(saved.algorithm);
            return Err(e.into());
        }
        if let Some((fallback, error)) = saved.fallback {
            let probe = (|| -> Result<Result<(), MpiError>, MpiError> {
                mpich::write_fallback(error)?;
                let mut buf = vec![0u8; bytes.min(MAX_BYTES) as usize];
                let r = self.comm.handle().library_bcast(&mut buf, 0);
                mpich::write_fallback(fallback)?;
                Ok(r)
            })();
            let refused = match probe {
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(e),
                Err(e) => {
                    let _ = mpich::write_fallback(fallback);
                    let _ = mpich::write_algorithm(saved.algorithm);
                    return Err(e.into());
                }
            };
            if let Some(e) = refused {
                mpich::write_algorithm(saved.algorithm)?;
                return Err(BenchError::NotApplicable(format!(
                    "MPICH cannot apply {} to {bytes} bytes on {} ranks ({}: {})",
                    choice.name,
                    self.comm.size(),
                    e.call,
                    // MPICH's error stack: its last line says why.
                    e.message
                        .lines()
                        .map(str::trim)
                        .rfind(|l| !l.is_empty())
                        .unwrap_or("")
                )));
            }
        }
        Ok(saved.algorithm)
    }

    /// Runs `f` (the measurer's own collectives: the probe's allreduce, clock
    /// synchronisation, the final reduction) with MPICH's broadcast put back
    /// to its own choice when `subject` forces one, then forces it again:
    /// MPICH's other collectives call its broadcast inside (MPICH 5.0.2's
    /// allreduce aborts in an assertion with some forced).
    fn unforced<T, E>(
        &self,
        subject: &Subject,
        f: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, BenchError>
    where
        BenchError: From<E>,
    {
        let (Subject::Mpich { choice }, Some(saved)) = (subject, self.mpich_saved) else {
            return Ok(f()?);
        };
        mpich::write_algorithm(saved.algorithm)?;
        let r = f();
        mpich::write_algorithm(choice.value)?;
        Ok(r?)
    }

    /// Times one point for one run; rank 0 gets the samples (one per
    /// repetition, outliers flagged within the run), other ranks nothing.
    pub fn measure(&mut self, pt: &Point, run: u32) -> Result<Vec<Sample>, BenchError> {
        let restore = match pt.subject {
            Subject::Mpich { choice } => Some(self.force_mpich(choice, pt.bytes)?),
            _ => None,
        };
        let restore_forced = match pt.subject {
            Subject::OmpiAdapt { choice, segment } => {
                Some(self.force(Forcing::Adapt, choice.id, Some(*segment))?)
            }
            Subject::OmpiHan {
                choice, segment, ..
            } => Some(self.force(
                Forcing::Han,
                choice.id,
                choice.segmented().then_some(*segment),
            )?),
            _ => None,
        };
        let got = self.measure_inner(pt, run);
        if let Some(value) = restore {
            let back = mpich::write_algorithm(value);
            if got.is_ok() {
                back?;
            }
        }
        if let Some(component) = restore_forced {
            let forced = match component {
                Forcing::Adapt => &self.adapt,
                Forcing::Han => &self.han,
            };
            let back = forced.as_ref().expect("made by force").restore();
            if got.is_ok() {
                back?;
            }
        }
        got.map_err(|e| match e {
            // Window creation is collective: when the library cannot create
            // one, every rank learns it here, so all skip the algorithm alike.
            BenchError::Transport(TransportError::Mpi(m)) if m.call == "MPI_Win_allocate" => {
                BenchError::Unavailable(m.to_string())
            }
            // Likewise a shared window the library refused (agreed on
            // every rank by `Comm::shared_window`).
            BenchError::Transport(TransportError::SharedMemoryUnfit(why)) => {
                BenchError::Unavailable(why)
            }
            e => e,
        })
    }

    fn measure_inner(&mut self, pt: &Point, run: u32) -> Result<Vec<Sample>, BenchError> {
        if let Subject::LibraryCall { call, choice } = pt.subject {
            return self.measure_call(pt, run, *call, *choice);
        }
        let (rank, size) = (self.comm.rank(), self.comm.size());
        let coll = pt.subject.collective();
        let n = pt.bytes as usize;
        self.check(pt)?;
        self.set_tuned(pt.subject)?;
        let ctl = self.comm_for(pt.subject);

        // Schedules for every root this point uses, built before timing.
        let roots: Vec<usize> = match (coll, self.method.root) {
            (Collective::Swap, _) => vec![0],
            (_, RootPolicy::Fixed(r)) => vec![r.min(size - 1)],
            (_, RootPolicy::Rotate) => (0..size).collect(),
        };
        // A tree that fits one segment runs at run time as plain sends and
        // receives (the selector's direct path, in either execution): time
        // that, not the general executor, so a tune ranks what will run.
        // With overlap the call must be nonblocking: the executor then.
        let direct = match pt.subject {
            Subject::Ours(v) if coll == Collective::Bcast && pt.overlap_us <= 0.0 => {
                crate::select::direct::tree_of(&v.spec, v.exec)
                    .filter(|&(_, seg)| crate::select::direct::one_segment(pt.bytes, seg))
                    .map(|(t, _)| t)
            }
            _ => None,
        };
        let plans = self.plans(pt, direct.is_some(), &roots)?;
        let mut data = Pool::new(pt.bytes, self.method.cache);
        let mut recv = Pool::new(
            if coll == Collective::Swap {
                pt.bytes
            } else {
                0
            },
            self.method.cache,
        );
        let comm = self.comm;
        let nroots = roots.len();
        let mut slot = 0usize;
        // `count` calls from root index `first`: each from that root
        // (synchronized), or the root rotating per call (back-to-back, and a
        // buffer of its own per call when the cache is off).
        let mut calls = |first: usize, count: u32, rotate: bool| -> Result<(), BenchError> {
            slot += 1;
            for j in 0..count as usize {
                let root_idx = if rotate {
                    slot += 1;
                    (first + j) % nroots
                } else {
                    first % nroots
                };
                match (pt.subject, direct) {
                    (Subject::Ours(_), Some(tree)) => {
                        let d = data.slot(slot, n);
                        // SAFETY: `d` is n bytes of this rank's buffer; the
                        // communicator is the measurer's, of `size` ranks.
                        unsafe {
                            crate::select::direct::run(
                                comm.raw(),
                                rank,
                                size,
                                roots[root_idx],
                                tree,
                                d.as_mut_ptr(),
                                n as u64,
                            )
                        }
                        .map_err(TransportError::from)?;
                    }
                    (Subject::Ours(v), None) => {
                        let d = data.slot(slot, n);
                        let r = recv.slot(slot, if coll == Collective::Swap { n } else { 0 });
                        let pending =
                            start(comm, &plans[root_idx], v.exec, Buffers { data: d, recv: r })?;
                        compute(pt.overlap_us);
                        pending.wait()?;
                    }
                    (
                        Subject::Library
                        | Subject::OmpiTuned { .. }
                        | Subject::Mpich { .. }
                        | Subject::OmpiAdapt { .. }
                        | Subject::OmpiHan { .. }
                        | Subject::LibraryLabelled { .. },
                        _,
                    ) => {
                        ctl.library_bcast(data.slot(slot, n), roots[root_idx])?;
                        compute(pt.overlap_us);
                    }
                    (Subject::Interposed, _) => {
                        ctl.interposed_bcast(data.slot(slot, n), roots[root_idx])?;
                        compute(pt.overlap_us);
                    }
                    (Subject::LibraryCall { .. }, _) => {
                        return Err(BenchError::Invalid(
                            "a nonblocking call is measured by measure_call".into(),
                        ))
                    }
                }
            }
            Ok(())
        };
        let timed = self.time(pt, ctl, nroots, &mut calls)?;
        // The slowest rank's time per repetition; for `imb`, the mean over
        // ranks (no rank is late under barrier synchronisation, so the flags
        // sum to zero).
        let (op, scale) = match self.method.pattern {
            Pattern::Imb => (Op::Sum, 1.0 / size as f64),
            _ => (Op::Max, 1.0),
        };
        let mut all = self.unforced(pt.subject, || ctl.reduce(&timed.local, op, 0))?;
        if rank != 0 {
            return Ok(Vec::new());
        }
        all[..timed.reps].iter_mut().for_each(|t| *t *= scale);
        Ok(self.samples(pt, run, &roots, timed.per_call_rep, &all))
    }

    /// Refuses a point this measurer cannot time as asked.
    fn check(&self, pt: &Point) -> Result<(), BenchError> {
        if pt.bytes > MAX_BYTES {
            return Err(BenchError::Invalid(format!(
                "{} bytes is more than one MPI message can carry ({MAX_BYTES})",
                pt.bytes
            )));
        }
        if self.method.pattern == Pattern::BackToBack && pt.iterations != 1 {
            return Err(BenchError::Invalid(format!(
                "{} calls per repetition with the back-to-back pattern: it sizes its blocks of calls itself; measure with 1",
                pt.iterations
            )));
        }
        if self.method.pattern == Pattern::Imb && self.method.sync != SyncMode::Barrier {
            return Err(BenchError::Invalid(
                "the imb pattern times each rank's call after a barrier (IMB, OSU): use --sync barrier".into(),
            ));
        }
        Ok(())
    }

    /// Library and forced algorithms: sets Open MPI's variables for this
    /// subject (they may be read per call), on their own communicator.
    fn set_tuned(&mut self, subject: &Subject) -> Result<(), BenchError> {
        self.make_tuned_comm(subject)?;
        match subject {
            Subject::OmpiTuned { tuned, segment } => {
                crate::forcing::tuned::write(tuned.id, *segment)?
            }
            Subject::Library | Subject::LibraryLabelled { .. } | Subject::Interposed
                if !self.tuned_comms.is_empty() =>
            {
                crate::forcing::tuned::write(0, 0)?
            }
            _ => {}
        }
        Ok(())
    }

    /// The schedules of colltune's own algorithm from each root (none for
    /// the library's subjects, and none where the call runs as a `direct`
    /// tree). Decided from the layout alone, so every rank skips alike
    /// where shared memory does not fit.
    fn plans(&self, pt: &Point, direct: bool, roots: &[usize]) -> Result<Vec<Plan>, BenchError> {
        let Subject::Ours(v) = pt.subject else {
            return Ok(Vec::new());
        };
        let (rank, size, coll) = (self.comm.rank(), self.comm.size(), pt.subject.collective());
        self.comm
            .shared_memory_fits(coll, &v.spec)
            .map_err(BenchError::NotApplicable)?;
        if direct {
            return Ok(Vec::new());
        }
        Ok(roots
            .iter()
            .map(|&root| {
                build_resolved(
                    coll,
                    &v.spec,
                    &Shape {
                        rank,
                        size,
                        root,
                        bytes: pt.bytes,
                        nodes: self.comm.nodes(),
                    },
                )
                .map(Plan::new)
            })
            .collect::<Result<_, _>>()
            .map_err(TransportError::from)?)
    }

    /// Times `calls` (warm-up, a probe, then the repetitions under the
    /// method's synchronisation): this rank's time per repetition, then
    /// per repetition whether it started late (window).
    fn time(
        &self,
        pt: &Point,
        ctl: &CommHandle,
        nroots: usize,
        calls: &mut impl FnMut(usize, u32, bool) -> Result<(), BenchError>,
    ) -> Result<Timed, BenchError> {
        let (rank, size) = (self.comm.rank(), self.comm.size());
        for w in 0..self.method.warmup as usize {
            ctl.barrier()?;
            calls(w, pt.iterations, false)?;
        }
        // Probe: the cost of a synchronised repetition, slowest rank.
        let probe = 3;
        let t0 = ffi::wtime();
        for i in 0..probe {
            ctl.barrier()?;
            calls(i, pt.iterations, false)?;
        }
        let elapsed = (ffi::wtime() - t0) / probe as f64;
        let per_rep = self.unforced(pt.subject, || ctl.allreduce(elapsed, Op::Max))?;
        // Calls per repetition, and so the cost of one (every rank computes
        // the same from the agreed probe).
        let budget = self.method.budget.as_secs_f64();
        let (per_call_rep, rotate, per_rep) = match self.method.pattern {
            Pattern::Synchronized | Pattern::Imb => (pt.iterations, false, per_rep),
            Pattern::BackToBack => {
                let b = block_calls(budget, per_rep, nroots);
                (b, true, per_rep * f64::from(b))
            }
        };
        let reps = ((budget / per_rep.max(1e-7)) as u32).clamp(
            self.method.min_reps,
            self.method.max_reps.max(self.method.min_reps),
        ) as usize;

        // Per repetition: this rank's time, then (window) whether it was late.
        let mut local = vec![0f64; 2 * reps];
        let (times_local, late_local) = local.split_at_mut(reps);
        let per = f64::from(per_call_rep);
        match self.method.sync {
            SyncMode::Barrier => {
                for (rep, t) in times_local.iter_mut().enumerate() {
                    ctl.barrier()?;
                    let t0 = ffi::wtime();
                    calls(rep, per_call_rep, rotate)?;
                    *t = (ffi::wtime() - t0) * 1e6 / per;
                }
            }
            SyncMode::Window => {
                // A window twice the synchronised repetition's cost (and 50 us
                // more): room for the call and for ranks that lag.
                let window = 2.0 * per_rep + 50e-6;
                let offset =
                    self.unforced(pt.subject, || clock::offset_from_root(ctl, rank, size, 10))?;
                // Rank 0's clock is the reference: it picks the first start.
                let first = if rank == 0 {
                    ffi::wtime() + window.max(1e-3)
                } else {
                    0.0
                };
                let first =
                    f64::from_bits(self.unforced(pt.subject, || ctl.bcast(first.to_bits(), 0))?);
                for (rep, (t, late)) in times_local
                    .iter_mut()
                    .zip(late_local.iter_mut())
                    .enumerate()
                {
                    let at = first + rep as f64 * window + offset;
                    *late = f64::from(u8::from(clock::wait_until(at)));
                    calls(rep, per_call_rep, rotate)?;
                    *t = (ffi::wtime() - at) * 1e6 / per;
                }
            }
        }
        Ok(Timed {
            local,
            reps,
            per_call_rep,
        })
    }

    /// Rank 0's samples of one run from `all` (every repetition's time,
    /// then whether it started late): outliers flagged within the run.
    fn samples(
        &self,
        pt: &Point,
        run: u32,
        roots: &[usize],
        per_call_rep: u32,
        all: &[f64],
    ) -> Vec<Sample> {
        let coll = pt.subject.collective();
        let (times, late) = all.split_at(all.len() / 2);
        let flags: Vec<bool> = stats::outlier_flags(times)
            .into_iter()
            .zip(late)
            .map(|(o, &l)| o || l > 0.0)
            .collect();
        let nodes = self.comm.nodes();
        // The communicator's placement class: tables built from these
        // samples hold for it.
        let placement = self
            .comm
            .shape()
            .placement()
            .placement()
            .map(|p| p.to_string())
            .unwrap_or_default();
        times
            .iter()
            .zip(flags)
            .enumerate()
            .map(|(rep, (&t, outlier))| Sample {
                collective: coll.to_string(),
                algorithm: pt.subject.algorithm(),
                spec: pt.subject.spec(),
                execution: pt.subject.execution().into(),
                ranks: self.comm.size() as u32,
                ppn: nodes.max_ppn() as u32,
                nodes: nodes.num_nodes() as u32,
                layout: nodes.to_string(),
                bytes: pt.bytes,
                root: if coll == Collective::Swap {
                    -1
                } else {
                    roots[rep % roots.len()] as i64
                },
                cache: match self.method.cache {
                    CacheMode::Warm => "warm".into(),
                    CacheMode::Off(_) => "off".into(),
                },
                iterations: per_call_rep,
                overlap_us: pt.overlap_us,
                pattern: self.method.pattern.name().into(),
                run,
                rep: rep as u32 + 1,
                time_us: t,
                outlier: u8::from(outlier),
                mpi: self.prov.mpi.clone(),
                host: self.prov.host.clone(),
                source: self.prov.source.clone(),
                colltune: env!("CARGO_PKG_VERSION").into(),
                placement: placement.clone(),
                call: pt.subject.call().name().into(),
                overlap: None,
            })
            .collect()
    }
}

/// One point's timing on this rank: per repetition its time, then (the
/// window) whether it started late; the calls per repetition.
struct Timed {
    local: Vec<f64>,
    reps: usize,
    per_call_rep: u32,
}

/// The origin of samples measured on this communicator now.
pub fn provenance(comm: &Comm) -> Result<Origin, MpiError> {
    // Every rank reports rank 0's host: agree on it with a byte gather.
    let name = ffi::processor_name();
    let mut host = [0u8; 64];
    let b = name.as_bytes();
    host[..b.len().min(64)].copy_from_slice(&b[..b.len().min(64)]);
    let all = comm.gather(&host, 0)?;
    let host = if comm.rank() == 0 {
        String::from_utf8_lossy(&all[..64])
            .trim_end_matches('\0')
            .to_string()
    } else {
        name
    };
    Ok(Origin {
        mpi: library_short(),
        host,
        source: "measured".into(),
    })
}
