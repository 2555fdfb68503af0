//! Messages between two ranks, safe: blocking sends and receives of byte
//! slices, a [`Batch`] of nonblocking ones (their buffers borrowed until
//! they complete), and the one ping-pong ([`Peer::ping`] on one side,
//! [`Peer::pong`] on the other) that calibration times and clock
//! synchronisation reads the other rank's clock with.

use std::marker::PhantomData;

use colltune_algorithms::SendMode;

use super::control::Control;
use super::ffi::{self, MPI_Comm, MPI_Request};
use super::MpiError;

/// This rank's side of a conversation with one other rank of a
/// communicator (standard-mode sends).
#[derive(Clone, Copy, Debug)]
pub struct Peer<'c> {
    comm: MPI_Comm,
    other: usize,
    _comm: PhantomData<&'c ()>,
}

impl<'c> Peer<'c> {
    /// Talking to rank `other` of `comm`.
    pub fn new<C: Control>(comm: &'c C, other: usize) -> Peer<'c> {
        Peer {
            comm: comm.raw_handle(),
            other,
            _comm: PhantomData,
        }
    }

    /// The other rank.
    pub fn other(&self) -> usize {
        self.other
    }

    /// `MPI_Send` of `buf`.
    pub fn send(&self, buf: &[u8], tag: i32) -> Result<(), MpiError> {
        // SAFETY: buf is borrowed for the blocking call.
        unsafe {
            ffi::send(
                buf.as_ptr(),
                buf.len() as u64,
                self.other,
                tag,
                SendMode::Standard,
                self.comm,
            )
        }
    }

    /// `MPI_Recv` into `buf` (a message of at most its length).
    pub fn recv(&self, buf: &mut [u8], tag: i32) -> Result<(), MpiError> {
        // SAFETY: buf is borrowed for the blocking call.
        unsafe {
            ffi::recv(
                buf.as_mut_ptr(),
                buf.len() as u64,
                self.other,
                tag,
                self.comm,
            )
        }
    }

    /// One round trip from this side: sends `msg`, receives the answer
    /// into it. The other side calls [`Peer::pong`].
    pub fn ping(&self, msg: &mut [u8], tag: i32) -> Result<(), MpiError> {
        self.send(msg, tag)?;
        self.recv(msg, tag)
    }

    /// The answering side of [`Peer::ping`]: receives into `msg`, lets
    /// `answer` change it, sends it back.
    pub fn pong(
        &self,
        msg: &mut [u8],
        tag: i32,
        answer: impl FnOnce(&mut [u8]),
    ) -> Result<(), MpiError> {
        self.recv(msg, tag)?;
        answer(msg);
        self.send(msg, tag)
    }

    /// An empty batch of nonblocking calls to the other rank, room for
    /// `capacity` without reallocating.
    pub fn batch<'b>(&self, capacity: usize) -> Batch<'b>
    where
        'c: 'b,
    {
        Batch {
            comm: self.comm,
            other: self.other,
            reqs: Vec::with_capacity(capacity),
            _bufs: PhantomData,
        }
    }
}

/// Nonblocking sends and receives to one rank, completed together by
/// [`Batch::wait_all`]; their buffers stay borrowed until then. Dropping a
/// batch waits too, ignoring errors (MPI must not touch freed buffers).
#[derive(Debug)]
pub struct Batch<'b> {
    comm: MPI_Comm,
    other: usize,
    reqs: Vec<MPI_Request>,
    _bufs: PhantomData<&'b mut [u8]>,
}

impl<'b> Batch<'b> {
    /// `MPI_Isend` of `buf`.
    pub fn isend(&mut self, buf: &'b [u8], tag: i32) -> Result<(), MpiError> {
        // SAFETY: buf stays borrowed until the batch completes.
        let req = unsafe {
            ffi::isend(
                buf.as_ptr(),
                buf.len() as u64,
                self.other,
                tag,
                SendMode::Standard,
                self.comm,
            )?
        };
        self.reqs.push(req);
        Ok(())
    }

    /// `MPI_Irecv` into `buf`.
    pub fn irecv(&mut self, buf: &'b mut [u8], tag: i32) -> Result<(), MpiError> {
        // SAFETY: buf stays borrowed until the batch completes.
        let req = unsafe {
            ffi::irecv(
                buf.as_mut_ptr(),
                buf.len() as u64,
                self.other,
                tag,
                self.comm,
            )?
        };
        self.reqs.push(req);
        Ok(())
    }

    /// `MPI_Waitall` on every call of the batch.
    pub fn wait_all(mut self) -> Result<(), MpiError> {
        let r = ffi::waitall(&mut self.reqs);
        self.reqs.clear();
        r
    }
}

impl Drop for Batch<'_> {
    fn drop(&mut self) {
        if !self.reqs.is_empty() && !ffi::finalized() {
            let _ = ffi::waitall(&mut self.reqs);
        }
    }
}
