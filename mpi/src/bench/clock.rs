//! Clock synchronisation for window-synchronised repetitions (the scheme of
//! SKaMPI and ReproMPI: every rank learns its clock's offset from rank 0's,
//! so that all can start a repetition at one agreed instant instead of on
//! leaving a barrier, which lets ranks go at different times).
//!
//! Offsets come from ping-pongs between rank 0 and each other rank in turn:
//! rank 0 notes when it sends (`t0`) and when the reply arrives (`t1`), the
//! other rank answers with its own clock (`ti`); on the round with the
//! shortest round trip, the offset is `ti - (t0 + t1) / 2`, wrong by at most
//! half that round trip's asymmetry. Cost: `(p - 1) * rounds` ping-pongs.

use crate::transport::mpi::{ffi, Control, MpiError, Peer};

/// Tag of the synchronisation messages (on the measurer's private
/// communicator, between calls: nothing else is in flight).
const TAG: i32 = 0x7c10;

/// This rank's clock minus rank 0's, seconds (0 on rank 0), measured with
/// `rounds` ping-pongs per rank. Collective over `comm`.
pub fn offset_from_root(
    comm: &impl Control,
    rank: usize,
    size: usize,
    rounds: u32,
) -> Result<f64, MpiError> {
    let mut buf = [0u8; 8];
    if rank == 0 {
        for other in 1..size {
            let peer = Peer::new(comm, other);
            let mut best = (f64::INFINITY, 0f64);
            for _ in 0..rounds {
                let t0 = ffi::wtime();
                peer.ping(&mut buf, TAG)?;
                let t1 = ffi::wtime();
                if t1 - t0 < best.0 {
                    best = (t1 - t0, f64::from_ne_bytes(buf) - 0.5 * (t0 + t1));
                }
            }
            peer.send(&best.1.to_ne_bytes(), TAG)?;
        }
        Ok(0.0)
    } else {
        let peer = Peer::new(comm, 0);
        for _ in 0..rounds {
            peer.pong(&mut buf, TAG, |b| {
                b.copy_from_slice(&ffi::wtime().to_ne_bytes())
            })?;
        }
        peer.recv(&mut buf, TAG)?;
        Ok(f64::from_ne_bytes(buf))
    }
}

/// Waits until this rank's clock reads `at` (seconds); whether it was
/// already past it on arrival (the rank is late for the agreed start).
/// Yields the core while waiting: ranks may share cores.
pub fn wait_until(at: f64) -> bool {
    let mut now = ffi::wtime();
    if now > at {
        return true;
    }
    // Yield all the way: spinning the last stretch instead starved a rank
    // sharing the core (2 ranks per core on the emulated cluster: 1-byte
    // broadcasts took 17 or 30 us by turns, run spreads up to 2.7x; with
    // yields 17-22 us, spreads at most 1.1x).
    while now < at {
        std::thread::yield_now();
        now = ffi::wtime();
    }
    false
}
