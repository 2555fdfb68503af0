//! The two executions of a schedule on MPI, shared by every algorithm.
//!
//! - **Blocking**: ops in program order, as their `Post` says: `Blocking` ops
//!   as `MPI_Send` / `MPI_Rsend` / `MPI_Recv` / window synchronisation,
//!   `Immediate` ops as `MPI_Isend` / `MPI_Irsend` / `MPI_Irecv` / `MPI_Put`
//!   completed by the next `WaitAll`, exchanges as one `MPI_Sendrecv`.
//! - **Nonblocking** (dataflow): each op starts as soon as the ops it depends
//!   on have completed, ready ops in program order, and ops of one channel
//!   (peer, tag, direction) in program order so that messages match as in the
//!   schedule; receives without dependencies are all posted at once, and a
//!   segment is forwarded the moment it lands (`MPI_Waitany`).
//!
//! Both are split-phase: [`start`] issues everything that does not have to
//! wait for another rank and returns a [`Pending`] call; computation placed
//! between [`start`] and [`Pending::wait`] overlaps with the communication
//! in flight. [`execute`] is `start` followed by `wait`.

use std::collections::BTreeSet;
use std::ffi::c_int;
use std::marker::PhantomData;

use colltune_algorithms::{Buf, Execution, OpKind, Plan, Post, Region, Tag};

use super::ffi::{self, MPI_Request, MPI_Win};
use super::{Comm, TransportError};

fn tag(t: Tag) -> c_int {
    match t {
        Tag::Data => 1,
        Tag::Control => 2,
    }
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
/// (MPI must not write into freed buffers), ignoring errors. It borrows the
/// communicator, the plan and the buffers: none can go (the communicator's
/// window with puts in flight, say) before the call completes.
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

/// Starts one call: issues every op that need not wait for another rank.
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
    let mut run = Run {
        plan,
        exec,
        comm,
        base: [bufs.data.as_mut_ptr(), bufs.recv.as_mut_ptr(), wbase],
        win,
        pc: 0,
        reqs: Vec::new(),
        req_ops: Vec::new(),
        puts: Vec::new(),
        remaining: Vec::new(),
        ready: BTreeSet::new(),
        chan_next: Vec::new(),
        done: 0,
    };
    if exec == Execution::Nonblocking {
        run.remaining = s.ops.iter().map(|o| o.deps.len() as u32).collect();
        run.ready = plan.roots.iter().copied().collect();
        run.chan_next = vec![0; plan.channels];
    }
    run.progress(false)?;
    Ok(Pending {
        run: Some(run),
        _bufs: PhantomData,
    })
}

struct Run<'a> {
    plan: &'a Plan,
    exec: Execution,
    comm: &'a Comm,
    base: [*mut u8; 3],
    win: MPI_Win,
    // blocking: next op in program order
    pc: usize,
    // requests in flight and the op each belongs to
    reqs: Vec<MPI_Request>,
    req_ops: Vec<u32>,
    // puts issued, completed by the epoch's closing synchronisation
    puts: Vec<u32>,
    // dataflow
    remaining: Vec<u32>,
    ready: BTreeSet<u32>,
    chan_next: Vec<u32>,
    done: usize,
}

impl Run<'_> {
    fn ptr(&self, r: &Region) -> *mut u8 {
        // SAFETY: start() checked every buffer against the schedule's
        // lengths, and regions lie inside them (the builder records them).
        unsafe { self.base[r.buf.index()].add(r.offset as usize) }
    }

    fn finish(&mut self) -> Result<(), TransportError> {
        self.progress(true)?;
        match self.exec {
            Execution::Blocking => {
                ffi::waitall(&mut self.reqs)?;
                self.reqs.clear();
                self.req_ops.clear();
            }
            Execution::Nonblocking => {
                while self.done < self.plan.schedule.ops.len() {
                    if self.reqs.is_empty() {
                        return Err(TransportError::Mpi(super::MpiError {
                            call: "colltune dataflow",
                            code: -1,
                            message:
                                "no op can start and none is in flight: the schedule is malformed"
                                    .into(),
                        }));
                    }
                    let i = ffi::waitany(&mut self.reqs)?;
                    self.reqs.swap_remove(i);
                    let op = self.req_ops.swap_remove(i);
                    self.complete(op);
                    self.progress(true)?;
                }
            }
        }
        Ok(())
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
            let local = op.post == Post::Immediate || matches!(op.kind, OpKind::Copy { .. });
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
                            ffi::waitall(&mut self.reqs)?;
                            self.reqs.clear();
                            self.req_ops.clear();
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

    /// Dataflow: start ready ops in program order, each channel in order.
    fn progress_dataflow(&mut self, may_block: bool) -> Result<(), TransportError> {
        loop {
            let mut started = false;
            let candidates: Vec<u32> = self.ready.iter().copied().collect();
            let plan = self.plan;
            for i in candidates {
                let op = &plan.schedule.ops[i as usize];
                if let Some((c, pos)) = self.plan.chan[i as usize] {
                    if self.chan_next[c as usize] != pos {
                        continue;
                    }
                }
                let blocking_sync = matches!(
                    op.kind,
                    OpKind::Fence
                        | OpKind::AccessTo { .. }
                        | OpKind::EndAccess
                        | OpKind::EndExposure
                );
                if blocking_sync && !may_block && !(self.reqs.is_empty() && self.puts.is_empty()) {
                    // Closing an epoch waits for other ranks: leave it to wait().
                    return Ok(());
                }
                if let Some((c, _)) = self.plan.chan[i as usize] {
                    self.chan_next[c as usize] += 1;
                }
                self.ready.remove(&i);
                self.issue(i)?;
                started = true;
            }
            if !started {
                return Ok(());
            }
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
                // SAFETY: as in ptr(); the request completes before the
                // Pending call that borrows the buffers ends.
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
                self.reqs.push(req);
                self.req_ops.push(i);
            }
            OpKind::Recv { from, dst, tag: t } => {
                // SAFETY: as above.
                let req = unsafe {
                    ffi::irecv(self.ptr(dst), dst.len, from.idx(), tag(*t), self.comm.raw())?
                };
                self.reqs.push(req);
                self.req_ops.push(i);
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
            OpKind::WaitAll => {
                if self.exec == Execution::Blocking {
                    ffi::waitall(&mut self.reqs)?;
                    self.reqs.clear();
                    self.req_ops.clear();
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
        if self.exec != Execution::Nonblocking {
            return;
        }
        self.done += 1;
        let plan = self.plan;
        for &d in &plan.dependents[i as usize] {
            let r = &mut self.remaining[d as usize];
            *r -= 1;
            if *r == 0 {
                self.ready.insert(d);
            }
        }
    }
}
