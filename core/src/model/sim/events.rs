//! The event queue: pending events popped in (time, sequence number) order,
//! the earliest first and among equal times the one pushed first. Simulated
//! time never goes back, so a radix heap over the times' bit patterns does
//! it with a few vector pushes per event instead of a binary heap's
//! O(log n) comparisons.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A simulated time as a key with the order of `f64::total_cmp`.
#[inline]
fn time_key(t: f64) -> u64 {
    let b = t.to_bits();
    if b >> 63 == 1 {
        !b
    } else {
        b | 1 << 63
    }
}

#[inline]
fn key_time(k: u64) -> f64 {
    f64::from_bits(if k >> 63 == 1 { k & !(1 << 63) } else { !k })
}

/// A pending event, ordered by (time, sequence number): the earliest first,
/// and among equal times the one pushed first. `r` and `ev` are the
/// engine's: the rank, and what happens to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Event {
    key: u64,
    seq: u64,
    pub r: u32,
    pub ev: u32,
}

impl Event {
    /// When it happens, microseconds.
    #[inline]
    pub fn time(&self) -> f64 {
        key_time(self.key)
    }
}

/// The pending events, popped in (time, sequence number) order: a radix heap
/// over the time keys (every event is pushed for the time being handled or
/// later), bucket 0 holding the events of the current time in push order;
/// an event pushed for an earlier time (none is, but nothing breaks if one
/// is) waits in a plain heap that is always emptied first.
pub(super) struct Events {
    /// Bucket `b` > 0: keys whose highest bit differing from `last` is `b - 1`.
    buckets: Vec<Vec<Event>>,
    /// Bucket 0 is popped from here on.
    head: usize,
    /// The key of bucket 0: the smallest key pending in the buckets.
    last: u64,
    /// Buckets that hold events (bit `b` for bucket `b`; bucket 0 aside).
    full: u128,
    late: BinaryHeap<Reverse<Event>>,
    seq: u64,
}

impl Default for Events {
    fn default() -> Self {
        Events {
            buckets: (0..65).map(|_| Vec::new()).collect(),
            head: 0,
            last: 0,
            full: 0,
            late: BinaryHeap::new(),
            seq: 0,
        }
    }
}

impl Events {
    #[inline]
    fn bucket(&self, key: u64) -> usize {
        64 - (key ^ self.last).leading_zeros() as usize
    }

    /// Adds event `ev` of rank `r` at time `t`.
    #[inline]
    pub fn push(&mut self, t: f64, r: u32, ev: u32) {
        self.seq += 1;
        let e = Event {
            key: time_key(t),
            seq: self.seq,
            r,
            ev,
        };
        if e.key < self.last {
            self.late.push(Reverse(e));
            return;
        }
        let b = self.bucket(e.key);
        self.buckets[b].push(e);
        self.full |= 1 << b;
    }

    /// The next event, if any.
    #[inline]
    pub fn pop(&mut self) -> Option<Event> {
        if let Some(Reverse(e)) = self.late.pop() {
            return Some(e);
        }
        if self.head == self.buckets[0].len() {
            self.refill()?;
        }
        let e = self.buckets[0][self.head];
        self.head += 1;
        Some(e)
    }

    /// Bucket 0 is spent: moves the smallest key's events into it. (Inlined
    /// into the run loop, as it was when this queue lived in the engine's
    /// file: called out of line it costs some 4% more instructions there.)
    #[inline]
    fn refill(&mut self) -> Option<()> {
        self.buckets[0].clear();
        self.head = 0;
        self.full &= !1;
        if self.full == 0 {
            return None;
        }
        let b = self.full.trailing_zeros() as usize;
        let mut from = std::mem::take(&mut self.buckets[b]);
        self.full &= !(1 << b);
        self.last = from.iter().map(|e| e.key).min().expect("full bucket");
        for &e in &from {
            let d = self.bucket(e.key);
            self.buckets[d].push(e);
            self.full |= 1 << d;
        }
        from.clear();
        self.buckets[b] = from;
        // Events of one time leave in the order they were pushed.
        self.buckets[0].sort_unstable_by_key(|e| e.seq);
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::Events;

    #[test]
    fn events_leave_by_time_then_push_order() {
        let mut q = Events::default();
        let ts = [3.0, 0.5, 3.0, 1e9, 0.0, 0.5, 2.25, 3.0];
        for (i, &t) in ts.iter().enumerate() {
            q.push(t, i as u32, 0);
        }
        // Pushed while the queue is being drained, for the current time.
        let first = q.pop().unwrap();
        assert_eq!((first.time(), first.r), (0.0, 4));
        q.push(0.0, 99, 0);
        let mut got = vec![(first.time(), first.r)];
        while let Some(e) = q.pop() {
            got.push((e.time(), e.r));
        }
        let want = [
            (0.0, 4),
            (0.0, 99),
            (0.5, 1),
            (0.5, 5),
            (2.25, 6),
            (3.0, 0),
            (3.0, 2),
            (3.0, 7),
            (1e9, 3),
        ];
        assert_eq!(got, want);
    }
}
