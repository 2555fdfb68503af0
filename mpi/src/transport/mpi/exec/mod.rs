//! The two executions of a schedule on MPI, shared by every algorithm.
//!
//! - **Blocking**: ops in program order, as their `Post` says: `Blocking` ops
//!   as `MPI_Send` / `MPI_Rsend` / `MPI_Recv` / window synchronisation,
//!   `Immediate` ops as `MPI_Isend` / `MPI_Irsend` / `MPI_Irecv` / `MPI_Put`
//!   completed by the next `WaitAll`, exchanges as one `MPI_Sendrecv`.
//! - **Nonblocking** (dataflow): each op starts as soon as the ops it depends
//!   on have completed, ready ops in program order, and ops of one channel
//!   (peer, tag, direction) in program order so that messages match as in the
//!   schedule; a segment is forwarded the moment it lands.
//!
//! Shared-memory ops (the node's window, `Comm`'s): a `Load` is a copy out
//! of the peer's part, a `Signal` an atomic release store of (call number
//! << 32 | value) into this rank's flag; an `Await` polls the peer's flag
//! with atomic acquire loads; an await of the previous call's value
//! compares with that call's number. Under the unified memory model (what
//! shared windows report) the release/acquire pair orders the data; under
//! the separate one, `MPI_Win_sync` before each signal and after each await
//! met (never per poll).
//! The blocking execution waits for it in place (yielding the processor
//! between polls, driving MPI progress while requests are in flight); the
//! dataflow execution keeps unmet awaits aside and polls them between
//! `MPI_Testsome` calls, yielding when neither moved.
//!
//! Both are split-phase: [`start`] issues everything that does not have to
//! wait for another rank and returns a [`Pending`] call; computation placed
//! between [`start`] and [`Pending::wait`] overlaps with the communication
//! in flight. [`execute`] is `start` followed by `wait`.
//!
//! # Cost of the dataflow execution
//!
//! A call costs O(ops + completions) (times a log of the few ops ready at
//! once), whatever the number of segments:
//!
//! - *Requests in flight are bounded* per channel (a window of
//!   [`window`] requests: 256 over all channels, at least 16 each), so the
//!   request array `MPI_Waitsome` scans stays short; the next op of a
//!   channel is posted as one of the channel's requests completes. A
//!   channel's window only ever waits for that channel's earlier messages,
//!   which the peer has posted or will post without waiting for anything
//!   this rank holds back, so the window adds no deadlock. One exception
//!   keeps the ready-send rule: a receive from a peer that a later go-ahead
//!   (`Tag::Control` send) to that peer announces is never held back, so the
//!   go-ahead still leaves only once the receive is posted.
//! - *Completions* come from `MPI_Waitsome` over that short array, which is
//!   kept compact (completed requests swap-removed).
//! - *The ready set is never copied or scanned*: ops start from a min-heap
//!   by program index, merged with the plan's roots in order; a channel
//!   offers only its next op, and only once it is ready and its window has
//!   room. A completed op touches only its dependents.
//!
//! # Errors
//!
//! A call that fails midway (an MPI error from a post, a wait, or a
//! request's status, such as `MPI_ERR_TRUNCATE`) starts nothing more and
//! drains what it posted before returning the error: receives in flight are
//! cancelled (`MPI_Cancel`, then waited for; one that already matched
//! completes instead), sends in flight are completed. Nothing posted by the
//! failed call is left to match a later call on the communicator, nor to
//! write into the caller's buffers after it returned. Dropping a
//! [`Pending`] waits for the call, draining the same way on error.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::ffi::c_int;
use std::marker::PhantomData;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use colltune_algorithms::{Buf, Execution, OpKind, Plan, Post, Rank, Region, Tag};

use super::ffi::{self, MPI_Request, MPI_Win};
use super::{Comm, SharedWindow, TransportError, FLAGS_BYTES, FLAG_STRIDE};

mod flow;
use flow::{Active, Flow};

fn tag(t: Tag) -> c_int {
    match t {
        Tag::Data => 1,
        Tag::Control => 2,
    }
}

/// Requests in flight over all of a dataflow call's channels.
const WINDOW_TOTAL: u32 = 256;
/// Requests in flight per channel, at least.
const WINDOW_MIN: u32 = 16;

/// Requests the dataflow execution keeps in flight per channel, for a plan
/// with `channels` channels: `WINDOW_TOTAL / channels`, at least
/// `WINDOW_MIN`. `COLLTUNE_DATAFLOW_WINDOW=n` (read once) sets it to `n`
/// for every channel, for testing (1 exercises every hold-back).
pub fn window(channels: usize) -> u32 {
    static FORCED: OnceLock<Option<u32>> = OnceLock::new();
    let forced = *FORCED.get_or_init(|| {
        std::env::var("COLLTUNE_DATAFLOW_WINDOW")
            .ok()
            .and_then(|v| v.trim().parse::<u32>().ok())
            .filter(|&n| n > 0)
    });
    forced.unwrap_or_else(|| {
        (WINDOW_TOTAL / u32::try_from(channels.max(1)).unwrap_or(u32::MAX)).max(WINDOW_MIN)
    })
}

/// The caller's buffers for one call: the data buffer (broadcast buffer or
/// swap's outgoing), and the swap's receive buffer.
pub struct Buffers<'a> {
    pub data: &'a mut [u8],
    pub recv: &'a mut [u8],
}

impl<'a> Buffers<'a> {
    pub fn bcast(data: &'a mut [u8]) -> Self {
        Buffers {
            data,
            recv: &mut [],
        }
    }
    pub fn swap(out: &'a mut [u8], recv: &'a mut [u8]) -> Self {
        Buffers { data: out, recv }
    }
}

/// A started call; [`Pending::wait`] completes it. Dropping it waits too
/// (MPI must not write into freed buffers), ignoring errors but draining as
/// `wait` does (nothing is left in flight). It borrows the communicator,
/// the plan and the buffers: none can go (the communicator's window with
/// puts in flight, say) before the call completes.
pub struct Pending<'a> {
    run: Option<Run<'a>>,
    _bufs: PhantomData<&'a mut [u8]>,
}

impl Pending<'_> {
    pub fn wait(mut self) -> Result<(), TransportError> {
        match self.run.take() {
            Some(mut r) => r.finish(),
            None => Ok(()),
        }
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if let Some(mut r) = self.run.take() {
            let _ = r.finish();
        }
    }
}

/// Runs one call to completion.
pub fn execute(
    comm: &Comm,
    plan: &Plan,
    exec: Execution,
    bufs: Buffers<'_>,
) -> Result<(), TransportError> {
    start(comm, plan, exec, bufs)?.wait()
}

/// Starts one call: issues every op that need not wait for another rank
/// (in the dataflow execution, up to each channel's window).
pub fn start<'a>(
    comm: &'a Comm,
    plan: &'a Plan,
    exec: Execution,
    bufs: Buffers<'a>,
) -> Result<Pending<'a>, TransportError> {
    let s = &plan.schedule;
    let need = |b: Buf| s.buf_len[b.index()];
    if (bufs.data.len() as u64) < need(Buf::Data) {
        return Err(TransportError::BufferTooSmall {
            buffer: "data",
            have: bufs.data.len(),
            need: need(Buf::Data),
        });
    }
    if (bufs.recv.len() as u64) < need(Buf::Recv) {
        return Err(TransportError::BufferTooSmall {
            buffer: "receive",
            have: bufs.recv.len(),
            need: need(Buf::Recv),
        });
    }
    let (win, wbase) = if s.uses_window() {
        comm.window(need(Buf::Window))?
    } else {
        (ffi::win_null(), std::ptr::null_mut())
    };
    let (shared, sbase, call) = if need(Buf::Shared) > 0 {
        let w = comm.shared_window(need(Buf::Shared))?;
        let me = w.parts[comm.rank()].expect("this rank maps its own part");
        // SAFETY: every part starts with its flags.
        let data = unsafe { me.add(FLAGS_BYTES) };
        let call = if s.uses_shared() {
            check_shared_peers(comm.rank(), plan, &w)?;
            comm.next_shared_call()
        } else {
            0
        };
        (Some(w), data, call)
    } else {
        (None, std::ptr::null_mut(), 0)
    };
    let mut run = Run {
        plan,
        exec,
        comm,
        base: [bufs.data.as_mut_ptr(), bufs.recv.as_mut_ptr(), wbase, sbase],
        win,
        pc: 0,
        active: Active::default(),
        puts: Vec::new(),
        flow: (exec == Execution::Nonblocking).then(|| Flow::new(plan)),
        shared,
        call,
        awaiting: Vec::new(),
    };
    if let Err(e) = run.progress(false) {
        run.drain();
        return Err(e);
    }
    Ok(Pending {
        run: Some(run),
        _bufs: PhantomData,
    })
}

/// Every peer a schedule loads from or waits on maps its part of this
/// node's shared window (the selector checks this for every rank alike
/// before it runs a shared-memory algorithm: `Comm::shared_memory_fits`).
fn check_shared_peers(me: usize, plan: &Plan, w: &SharedWindow) -> Result<(), TransportError> {
    for op in &plan.schedule.ops {
        if let OpKind::Load { from: peer, .. } | OpKind::Await { on: peer, .. } = op.kind {
            if w.parts.get(peer.idx()).is_none_or(|p| p.is_none()) {
                return Err(TransportError::NotSharedMemory {
                    rank: me,
                    peer: peer.idx(),
                });
            }
        }
    }
    Ok(())
}

struct Run<'a> {
    plan: &'a Plan,
    exec: Execution,
    comm: &'a Comm,
    base: [*mut u8; Buf::COUNT],
    win: MPI_Win,
    // blocking: next op in program order
    pc: usize,
    // requests in flight and the op each belongs to
    active: Active,
    // puts issued, completed by the epoch's closing synchronisation
    puts: Vec<u32>,
    // dataflow state (None in the blocking execution)
    flow: Option<Flow>,
    // the node's shared window, if the call uses it
    shared: Option<Rc<SharedWindow>>,
    // this call's number among the calls through the shared window
    call: u64,
    // dataflow: awaits issued whose flag has not got there yet
    awaiting: Vec<u32>,
}

impl Run<'_> {
    fn ptr(&self, r: &Region) -> *mut u8 {
        let r = self.placed(*r);
        // SAFETY: start() checked every buffer against the schedule's
        // lengths, and regions lie inside them (the builder records them;
        // a ring's slots too: the window holds the whole ring).
        unsafe { self.base[r.buf.index()].add(r.offset as usize) }
    }

    /// Where `r` lies in this call: a region in the slot of the
    /// schedule's ring (`Schedule::ring`) moves to this call's slot.
    fn placed(&self, r: Region) -> Region {
        match self.plan.schedule.ring {
            Some(ring) => ring.place(r, self.call),
            None => r,
        }
    }

    /// Rank `r`'s flag `f` in the shared window.
    fn flag(&self, r: Rank, f: u8) -> &AtomicU64 {
        let w = self
            .shared
            .as_ref()
            .expect("a shared window for shared ops");
        let part = w.parts[r.idx()].expect("start() checked every peer's part");
        // SAFETY: flags are 64-byte aligned u64s at the head of a part that
        // lives as long as `self.shared`; every access to them is atomic.
        unsafe { AtomicU64::from_ptr(part.add(f as usize * FLAG_STRIDE).cast::<u64>()) }
    }

    /// What a flag holds once value `v` of this call was signalled.
    fn stamp(&self, v: u32) -> u64 {
        self.call << 32 | v as u64
    }

    /// Whether await `i` is met: rank `on`'s flag `f` reached `value` in
    /// this call (in the previous one: `previous`, met at once in the
    /// window's first call, whose flags start at 0); once it has, under the
    /// separate memory model, `MPI_Win_sync` before the data is read.
    fn reached(&self, i: u32) -> Result<bool, TransportError> {
        let OpKind::Await {
            on,
            flag: f,
            value,
            back,
        } = self.plan.schedule.ops[i as usize].kind
        else {
            unreachable!("only awaits wait")
        };
        let want = if back == 0 {
            self.stamp(value)
        } else if self.call > back as u64 {
            (self.call - back as u64) << 32 | value as u64
        } else {
            0
        };
        // Seen before (flags only rise): met without loading the owner's
        // line again; the acquire load that saw it ordered the data.
        if self.comm.flag_seen(on.idx(), f) >= want {
            return Ok(true);
        }
        let v = self.flag(on, f).load(Ordering::Acquire);
        if v >= want {
            self.comm.saw_flag(on.idx(), f, v);
            self.win_sync_if_separate()?;
            return Ok(true);
        }
        Ok(false)
    }

    /// `MPI_Win_sync` where the window's memory model needs it (separate);
    /// under the unified model the flag's acquire load / release store
    /// already order the data, and the call (a full fence in Open MPI's
    /// osc/sm, behind argument checks) is skipped.
    fn win_sync_if_separate(&self) -> Result<(), TransportError> {
        let w = self.shared.as_ref().expect("shared window");
        if !w.unified {
            ffi::win_sync(w.win)?;
        }
        Ok(())
    }

    /// Dataflow: completes every await whose flag got there; whether any did.
    fn poll_awaits(&mut self) -> Result<bool, TransportError> {
        let mut any = false;
        let mut k = 0;
        while k < self.awaiting.len() {
            let i = self.awaiting[k];
            if self.reached(i)? {
                self.awaiting.swap_remove(k);
                self.complete(i);
                any = true;
            } else {
                k += 1;
            }
        }
        Ok(any)
    }

    /// Completes the call; on error, drains what is in flight first.
    fn finish(&mut self) -> Result<(), TransportError> {
        let r = self.complete_all();
        if r.is_err() {
            self.drain();
        }
        r
    }

    fn complete_all(&mut self) -> Result<(), TransportError> {
        self.progress(true)?;
        if self.flow.is_none() {
            ffi::waitall(&mut self.active.reqs)?;
            self.active.clear();
            return Ok(());
        }
        let n = self.plan.schedule.ops.len();
        while self.flow.as_ref().is_some_and(|f| f.done < n) {
            if !self.awaiting.is_empty() {
                // Flags and messages both: poll, and yield the processor
                // when neither moved (ranks may outnumber cores).
                let mut moved = self.poll_awaits()?;
                if !self.active.is_empty() {
                    moved |= self.collect(false)?;
                }
                if !moved {
                    std::thread::yield_now();
                }
                self.progress(true)?;
                continue;
            }
            if self.active.is_empty() {
                return Err(TransportError::Mpi(super::MpiError {
                    call: "colltune dataflow",
                    code: -1,
                    message: "no op can start and none is in flight: the schedule is malformed"
                        .into(),
                }));
            }
            self.collect(true)?;
            self.progress(true)?;
        }
        Ok(())
    }

    /// Waits for at least one request in flight (`MPI_Waitsome`; `wait`
    /// false: takes what completed, `MPI_Testsome`), removes every
    /// completed one from the array and completes its op; whether any
    /// did. A request that failed is the call's error.
    fn collect(&mut self, wait: bool) -> Result<bool, TransportError> {
        let a = &mut self.active;
        if wait {
            ffi::waitsome(&mut a.reqs, &mut a.some)?;
        } else {
            ffi::testsome(&mut a.reqs, &mut a.some)?;
        }
        // Highest index first, so swap_remove moves only survivors.
        a.some.done.sort_unstable_by_key(|d| Reverse(d.0));
        a.completed.clear();
        let mut failed = None;
        for (k, err) in a.some.done.drain(..) {
            a.reqs.swap_remove(k);
            a.completed.push(a.ops.swap_remove(k));
            if failed.is_none() {
                failed = err;
            }
        }
        if let Some(e) = failed {
            return Err(e.into());
        }
        let plan = self.plan;
        let flow = self.flow.as_mut().expect("dataflow");
        for &op in &self.active.completed {
            flow.request_done(plan, op);
        }
        Ok(!self.active.completed.is_empty())
    }

    /// After an error: starts nothing more, cancels every receive in flight
    /// and completes every send, so that nothing this call posted can
    /// match a later call or write into the caller's buffers once it
    /// returned. Errors here are ignored: the call's first error is the
    /// one reported.
    fn drain(&mut self) {
        let ops = &self.plan.schedule.ops;
        for (req, &op) in self.active.reqs.iter_mut().zip(&self.active.ops) {
            if matches!(ops[op as usize].kind, OpKind::Recv { .. }) {
                let _ = ffi::cancel(req);
            }
        }
        for req in &mut self.active.reqs {
            // A receive that had matched completes; one cancelled reports so.
            let _ = ffi::wait_cancelled(req);
        }
        self.active.clear();
        self.awaiting.clear();
        if let Some(f) = self.flow.as_mut() {
            // Nothing more starts.
            f.heap.clear();
            f.next_root = self.plan.roots.len();
            f.done = ops.len();
        }
        self.pc = ops.len();
    }

    fn progress(&mut self, may_block: bool) -> Result<(), TransportError> {
        match self.exec {
            Execution::Blocking => self.progress_blocking(may_block),
            Execution::Nonblocking => self.progress_dataflow(may_block),
        }
    }

    /// Program order. Before `wait` (`may_block` false) it stops at the
    /// first op that has to wait for another rank.
    fn progress_blocking(&mut self, may_block: bool) -> Result<(), TransportError> {
        let plan = self.plan;
        let ops = &plan.schedule.ops;
        while self.pc < ops.len() {
            let op = &ops[self.pc];
            let local = op.post == Post::Immediate
                || matches!(op.kind, OpKind::Copy { .. } | OpKind::Signal { .. });
            if !may_block && !local {
                return Ok(());
            }
            match op.post {
                Post::ExchangeWithNext => {
                    let next = &ops[self.pc + 1];
                    let (s, r) = match (&op.kind, &next.kind) {
                        (OpKind::Send { .. }, OpKind::Recv { .. }) => (&op.kind, &next.kind),
                        _ => (&next.kind, &op.kind),
                    };
                    let (
                        OpKind::Send {
                            to, src, tag: st, ..
                        },
                        OpKind::Recv { from, dst, tag: rt },
                    ) = (s, r)
                    else {
                        unreachable!("the checker proves exchanges pair a send and a receive")
                    };
                    // SAFETY: regions lie in the caller's buffers (see ptr()).
                    unsafe {
                        ffi::sendrecv(
                            self.ptr(src),
                            src.len,
                            to.idx(),
                            tag(*st),
                            self.ptr(dst),
                            dst.len,
                            from.idx(),
                            tag(*rt),
                            self.comm.raw(),
                        )?;
                    }
                    self.pc += 2;
                }
                Post::Immediate => {
                    let i = self.pc as u32;
                    self.issue(i)?;
                    self.pc += 1;
                }
                Post::Blocking => {
                    let i = self.pc as u32;
                    match &op.kind {
                        OpKind::WaitAll => {
                            ffi::waitall(&mut self.active.reqs)?;
                            self.active.clear();
                        }
                        OpKind::Send {
                            to,
                            src,
                            tag: t,
                            mode,
                        } => {
                            // SAFETY: as above.
                            unsafe {
                                ffi::send(
                                    self.ptr(src),
                                    src.len,
                                    to.idx(),
                                    tag(*t),
                                    *mode,
                                    self.comm.raw(),
                                )?
                            };
                        }
                        OpKind::Await { .. } => {
                            while !self.reached(i)? {
                                if !self.active.is_empty() {
                                    // Keep this rank's messages moving.
                                    ffi::progress(self.comm.raw())?;
                                }
                                std::thread::yield_now();
                            }
                        }
                        OpKind::Recv { from, dst, tag: t } => {
                            // SAFETY: as above.
                            unsafe {
                                ffi::recv(
                                    self.ptr(dst),
                                    dst.len,
                                    from.idx(),
                                    tag(*t),
                                    self.comm.raw(),
                                )?
                            };
                        }
                        _ => {
                            self.issue(i)?;
                        }
                    }
                    self.pc += 1;
                }
            }
        }
        Ok(())
    }

    /// Dataflow: start ready ops in program order, each channel in order
    /// and within its window.
    fn progress_dataflow(&mut self, may_block: bool) -> Result<(), TransportError> {
        let plan = self.plan;
        loop {
            let flow = self.flow.as_mut().expect("dataflow");
            let Some(i) = flow.peek(plan) else {
                return Ok(());
            };
            let blocking_sync = matches!(
                plan.schedule.ops[i as usize].kind,
                OpKind::Fence | OpKind::AccessTo { .. } | OpKind::EndAccess | OpKind::EndExposure
            );
            if blocking_sync && !may_block && !(self.active.is_empty() && self.puts.is_empty()) {
                // Closing an epoch waits for other ranks: leave it to wait().
                return Ok(());
            }
            flow.take(plan, i);
            self.issue(i)?;
            self.flow.as_mut().expect("dataflow").issued(plan, i);
        }
    }

    /// A request of op `i` is in flight.
    fn posted(&mut self, req: MPI_Request, i: u32) {
        self.active.push(req, i);
        if let Some(f) = self.flow.as_mut() {
            f.posted(self.plan, i);
        }
    }

    /// Issues op `i` without blocking where MPI allows (sends and receives
    /// as requests), completing local and synchronisation ops at once.
    fn issue(&mut self, i: u32) -> Result<(), TransportError> {
        let plan = self.plan;
        let op = &plan.schedule.ops[i as usize];
        match &op.kind {
            OpKind::Send {
                to,
                src,
                tag: t,
                mode,
            } => {
                // SAFETY: as in ptr(); the request completes (or is drained)
                // before the Pending call that borrows the buffers ends.
                let req = unsafe {
                    ffi::isend(
                        self.ptr(src),
                        src.len,
                        to.idx(),
                        tag(*t),
                        *mode,
                        self.comm.raw(),
                    )?
                };
                self.posted(req, i);
            }
            OpKind::Recv { from, dst, tag: t } => {
                // SAFETY: as above.
                let req = unsafe {
                    ffi::irecv(self.ptr(dst), dst.len, from.idx(), tag(*t), self.comm.raw())?
                };
                self.posted(req, i);
            }
            OpKind::Copy { src, dst } => {
                // SAFETY: both regions lie in the caller's buffers; ptr::copy
                // allows overlap.
                unsafe { std::ptr::copy(self.ptr(src), self.ptr(dst), src.len as usize) };
                self.complete(i);
            }
            OpKind::Put {
                to,
                src,
                dst_offset,
            } => {
                // SAFETY: as above; the window holds the schedule's window length.
                unsafe { ffi::put(self.ptr(src), src.len, to.idx(), *dst_offset, self.win)? };
                self.puts.push(i);
            }
            OpKind::Fence => {
                ffi::win_fence(self.win)?;
                self.complete_puts();
                self.complete(i);
            }
            OpKind::ExposeTo { group } => {
                let g: Vec<usize> = group.iter().map(|r| r.idx()).collect();
                ffi::win_post(&g, self.comm.raw(), self.win)?;
                self.complete(i);
            }
            OpKind::AccessTo { group } => {
                let g: Vec<usize> = group.iter().map(|r| r.idx()).collect();
                ffi::win_start(&g, self.comm.raw(), self.win)?;
                self.complete(i);
            }
            OpKind::EndAccess => {
                ffi::win_complete(self.win)?;
                self.complete_puts();
                self.complete(i);
            }
            OpKind::EndExposure => {
                ffi::win_wait(self.win)?;
                self.complete(i);
            }
            OpKind::Load { from, src, dst } => {
                let w = self.shared.as_ref().expect("shared window");
                let part = w.parts[from.idx()].expect("start() checked every peer's part");
                let src = self.placed(*src);
                // SAFETY: the peer's part holds FLAGS_BYTES + the schedule's
                // shared length (every part has one length); the await this
                // load depends on saw the peer publish these bytes, and the
                // peer overwrites them only once this rank signals it is done.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        part.add(FLAGS_BYTES + src.offset as usize),
                        self.ptr(dst),
                        src.len as usize,
                    )
                };
                self.complete(i);
            }
            &OpKind::Signal { flag, value } => {
                // Release: what this op depends on is visible before the flag.
                self.win_sync_if_separate()?;
                let me = Rank::from(self.comm.rank());
                self.flag(me, flag)
                    .store(self.stamp(value), Ordering::Release);
                self.complete(i);
            }
            OpKind::Await { .. } => {
                if self.reached(i)? {
                    self.complete(i);
                } else {
                    self.awaiting.push(i);
                }
            }
            OpKind::WaitAll => {
                if self.exec == Execution::Blocking {
                    ffi::waitall(&mut self.active.reqs)?;
                    self.active.clear();
                }
                self.complete(i);
            }
        }
        Ok(())
    }

    fn complete_puts(&mut self) {
        for p in std::mem::take(&mut self.puts) {
            self.complete(p);
        }
    }

    fn complete(&mut self, i: u32) {
        if let Some(f) = self.flow.as_mut() {
            f.complete(self.plan, i);
        }
    }
}

#[cfg(test)]
mod tests {
    //! The dataflow scheduler's cost, proven without MPI: one rank's
    //! [`Flow`] driven as [`Run`] drives it, every request it posts
    //! completing oldest first (the peer always ready). Counted, not timed:
    //! `benches/exec_segments.sh` measures the time, 16 MiB to 1 GiB.
    use super::*;
    use colltune_algorithms::{build, AlgoSpec, Collective, NodeMap, Shape};
    use std::collections::VecDeque;

    /// What driving one rank's schedule cost.
    struct Cost {
        ops: usize,
        /// Requests `MPI_Waitsome` would scan, summed over the waits.
        scanned: u64,
        /// Most requests in flight at once, over all channels.
        most_in_flight: usize,
    }

    fn drive(spec: &str, rank: usize, size: usize, bytes: u64) -> Cost {
        let nodes = NodeMap::single(size);
        let shape = Shape {
            rank,
            size,
            root: 0,
            bytes,
            nodes: &nodes,
        };
        let spec = AlgoSpec::parse(spec).unwrap();
        let plan = Plan::new(build(Collective::Bcast, &spec, &shape).unwrap());
        let ops = &plan.schedule.ops;
        let mut flow = Flow::new(&plan);
        let window = flow.window;
        let mut started = vec![false; ops.len()];
        let mut next_in_channel = vec![0u32; plan.channels];
        let mut in_flight: VecDeque<u32> = VecDeque::new();
        let (mut scanned, mut most) = (0u64, 0usize);
        loop {
            while let Some(i) = flow.peek(&plan) {
                flow.take(&plan, i);
                assert!(!started[i as usize], "op {i} started twice");
                started[i as usize] = true;
                assert_eq!(
                    flow.remaining[i as usize], 0,
                    "op {i} started before its deps"
                );
                if let Some((c, pos)) = plan.chan[i as usize] {
                    assert_eq!(next_in_channel[c as usize], pos, "channel {c} out of order");
                    next_in_channel[c as usize] += 1;
                }
                match ops[i as usize].kind {
                    OpKind::Send { .. } | OpKind::Recv { .. } => {
                        flow.posted(&plan, i);
                        in_flight.push_back(i);
                        if let Some((c, _)) = plan.chan[i as usize] {
                            assert!(
                                flow.chan_active[c as usize] <= window
                                    || i < flow.exempt_below[c as usize],
                                "channel {c} over its window of {window}"
                            );
                        }
                    }
                    _ => flow.complete(&plan, i),
                }
                flow.issued(&plan, i);
                most = most.max(in_flight.len());
            }
            if flow.done == ops.len() {
                break;
            }
            assert!(
                !in_flight.is_empty(),
                "{spec}: stuck with nothing in flight"
            );
            scanned += in_flight.len() as u64;
            let op = in_flight.pop_front().unwrap();
            flow.request_done(&plan, op);
        }
        assert!(started.iter().all(|&s| s), "{spec}: an op never started");
        Cost {
            ops: ops.len(),
            scanned,
            most_in_flight: most,
        }
    }

    /// `pipeline:segment=4096` at 4 MiB (1,024 segments) and 32 MiB (8,192):
    /// the requests scanned per op stay under a constant (the window), so 8
    /// times the segments cost about 8 times the scanning, not 64 (a
    /// quadratic executor posts every request and waits on all of them).
    #[test]
    fn dataflow_cost_is_linear_in_segments() {
        for (rank, size) in [(0, 2), (1, 2), (0, 3), (1, 3), (2, 3), (3, 5)] {
            let spec = "pipeline:segment=4096";
            let small = drive(spec, rank, size, 4 << 20);
            let large = drive(spec, rank, size, 32 << 20);
            assert!(large.ops >= 8 * 1024, "{} ops at 32 MiB", large.ops);
            let per_op = |c: &Cost| c.scanned as f64 / c.ops as f64;
            assert!(
                per_op(&large) <= WINDOW_TOTAL as f64 && per_op(&large) <= 1.5 * per_op(&small),
                "rank {rank} of {size}: {:.1} requests scanned per op at 32 MiB, \
                 {:.1} at 4 MiB: superlinear",
                per_op(&large),
                per_op(&small)
            );
            assert!(
                large.most_in_flight <= WINDOW_TOTAL as usize,
                "rank {rank} of {size}: {} requests in flight",
                large.most_in_flight
            );
        }
    }

    /// Every algorithm's dataflow schedule runs to the end on one rank's
    /// view, each op once, in channel order and within the windows.
    #[test]
    fn every_op_starts_once_in_channel_order() {
        for spec in [
            "binomial",
            "knomial:radix=4",
            "chain",
            "linear",
            "scatter-allgather",
        ] {
            for size in [2, 3, 5, 8] {
                for rank in 0..size {
                    drive(spec, rank, size, 1 << 20);
                }
            }
        }
    }
}
