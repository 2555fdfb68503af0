//! Reads of one buffer at once share it: a rendezvous message inside a
//! node is read by its receiver straight out of the sender's buffer, and
//! the reads of one sender's buffer in progress at once each go at an
//! equal share of one read's rate (processor sharing), not one after the
//! other.
//!
//! Why: inside a node a large message moves in one copy made by the
//! receiver (Open MPI's ob1 RGET protocol over vader/sm with CMA, XPMEM or
//! KNEM: the sender posts its buffer, the receiver copies it out with
//! `process_vm_readv` or a mapping, then a FIN frees the send; MPICH's
//! large-message LMT alike). Each receiver copies in its own process, so
//! the reads of one buffer run together, and what they share (the source's
//! pages, pinned by every reader under its memory map, and the cache
//! lines holding them) slows each in proportion: k reads started together
//! all end about k reads later, where a queue ends them one read apart.
//! A receiver's own copies are made by its one thread: it reads one
//! message at a time.
//!
//! ```text
//!   root's buffer read by ranks 1, 2, 3 (one read: T)
//!   queue:    1 |==|          shared:  1 |========|
//!             2 |  ==|                 2 |========|
//!             3 |    ==|               3 |========|
//!                 T 2T 3T                         3T
//! ```
//!
//! Cost: k reads of T started at once each end at k T (a queue: T, 2T,
//! ..., kT); the buffer is free at k T either way. So a root sending to
//! p - 1 ranks of its node (basic linear) keeps every receiver about
//! (p - 1) T, where a tree's parent shares its buffer among its two
//! children only. What the published sets show (ORFEO THIN, osu_bcast's
//! mean over ranks, 4-12 ranks of one socket, 256 KiB-1 MiB): basic linear
//! 3.4-10.9 x one 2-rank broadcast, about p - 1, where a queue of reads
//! gives (p + 2)(p - 1) / 2p, 2.3-6.4. Parameters: none of its own (the
//! link's rate and latency, the node's memory domains as before).
//!
//! The engine drives it: [`Shares::join`] when a read's data leaves,
//! which gives the time of the next end among the buffer's reads, with a
//! version; [`Shares::step`] at that time, which hands back the reads that
//! ended (a later join changes the version, and the earlier event is
//! stale).

/// One read in progress: the engine's rendezvous number, its receiver,
/// its bytes, when it started, and how long it still has at the full rate.
#[derive(Clone, Copy, Debug)]
pub(super) struct Read {
    pub k: u32,
    pub dst: u32,
    pub bytes: u64,
    pub start: f64,
    left: f64,
}

/// One buffer's reads in progress, the time they were last brought up to
/// date, and a version (each change of the set gives a new one).
#[derive(Clone, Debug, Default)]
struct Buffer {
    reads: Vec<Read>,
    at: f64,
    version: u32,
}

/// Versions fit the event's low bits.
pub(super) const VERSION_BITS: u32 = 30;

impl Buffer {
    /// Brings the reads up to `now`: each has moved an equal share.
    fn advance(&mut self, now: f64) {
        if !self.reads.is_empty() && now > self.at {
            let d = (now - self.at) / self.reads.len() as f64;
            for r in &mut self.reads {
                r.left -= d;
            }
        }
        self.at = self.at.max(now);
    }

    /// When the next read ends, and the version that event carries.
    fn next(&mut self) -> Option<(f64, u32)> {
        self.version = (self.version + 1) & ((1 << VERSION_BITS) - 1);
        let least = self.reads.iter().map(|r| r.left).reduce(f64::min)?;
        Some((
            self.at + least.max(0.0) * self.reads.len() as f64,
            self.version,
        ))
    }
}

/// Every rank's buffer, and per rank the buffer whose read it is making
/// (its thread copies one at a time), [`NONE`] if none.
#[derive(Clone, Debug, Default)]
pub(super) struct Shares {
    buffers: Vec<Buffer>,
    reading: Vec<u32>,
}

const NONE: u32 = u32::MAX;

/// What [`Shares::join`] did.
pub(super) enum Joined {
    /// The receiver is making another read: try again then.
    Later(f64),
    /// Joined: the buffer's next read ends then (an event with this
    /// version).
    Next(f64, u32),
}

impl Shares {
    pub fn new(ranks: usize) -> Self {
        Shares {
            buffers: vec![Buffer::default(); ranks],
            reading: vec![NONE; ranks],
        }
    }

    pub fn clear(&mut self) {
        self.buffers.iter_mut().for_each(|b| *b = Buffer::default());
        self.reading.fill(NONE);
    }

    /// Read `k` of `bytes` out of rank `src`'s buffer by rank `dst`, taking
    /// `work` microseconds alone, starts at `now` (no earlier than every
    /// event handled so far).
    pub fn join(&mut self, src: u32, dst: u32, k: u32, bytes: u64, work: f64, now: f64) -> Joined {
        let from = self.reading[dst as usize];
        if from != NONE {
            // Its thread is busy with another read: after that one's end
            // as it stands now (later if more reads join its buffer).
            let b = &self.buffers[from as usize];
            let left = b
                .reads
                .iter()
                .find(|r| r.dst == dst)
                .map_or(0.0, |r| r.left);
            let end = (b.at + left.max(0.0) * b.reads.len() as f64).max(now);
            return Joined::Later(end + f64::EPSILON * end.max(1.0));
        }
        self.reading[dst as usize] = src;
        let b = &mut self.buffers[src as usize];
        b.advance(now);
        b.reads.push(Read {
            k,
            dst,
            bytes,
            start: now,
            left: work,
        });
        let (t, v) = b.next().expect("a read");
        Joined::Next(t, v)
    }

    /// At `now`, the event of version `version` of `src`'s buffer: None if
    /// stale; else the reads that ended (into `done`) and the next event.
    pub fn step(
        &mut self,
        src: u32,
        version: u32,
        now: f64,
        done: &mut Vec<Read>,
    ) -> Option<Option<(f64, u32)>> {
        let b = &mut self.buffers[src as usize];
        if b.version != version {
            return None;
        }
        b.advance(now);
        // Ends within a rounding of now end now.
        let eps = 1e-9 * now.abs().max(1.0);
        let before = done.len();
        b.reads.retain(|r| {
            let ended = r.left <= eps;
            if ended {
                done.push(*r);
            }
            !ended
        });
        for r in &done[before..] {
            self.reading[r.dst as usize] = NONE;
        }
        Some(b.next())
    }
}
