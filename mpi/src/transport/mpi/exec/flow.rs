//! The bookkeeping of requests in flight ([`Active`]) and of the dataflow
//! execution ([`Flow`]): which ops are ready, per channel what is in flight
//! and what starts next, all of it updated incrementally.

use super::*;

/// The requests in flight, compact: `reqs[k]` belongs to op `ops[k]`.
#[derive(Default)]
pub(super) struct Active {
    pub(super) reqs: Vec<MPI_Request>,
    pub(super) ops: Vec<u32>,
    /// Scratch for `MPI_Waitsome`.
    pub(super) some: ffi::Completions,
    /// Scratch: the ops one `MPI_Waitsome` completed.
    pub(super) completed: Vec<u32>,
}

impl Active {
    pub(super) fn push(&mut self, req: MPI_Request, op: u32) {
        self.reqs.push(req);
        self.ops.push(op);
    }

    pub(super) fn is_empty(&self) -> bool {
        self.reqs.is_empty()
    }

    pub(super) fn clear(&mut self) {
        self.reqs.clear();
        self.ops.clear();
    }
}

/// The dataflow execution's state, all of it updated incrementally.
pub(super) struct Flow {
    /// Dependencies of each op not completed yet (0: ready).
    pub(super) remaining: Vec<u32>,
    /// The next of `plan.roots` not yet started (or passed over: channel
    /// ops among the roots start through their channel).
    pub(super) next_root: usize,
    /// Ready ops that are not roots, and channels' next ops once they may
    /// start: the smallest program index starts first.
    pub(super) heap: BinaryHeap<Reverse<u32>>,
    /// The ops of channel `c`, by position: `chan_ops[chan_start[c]..chan_start[c + 1]]`.
    pub(super) chan_ops: Vec<u32>,
    pub(super) chan_start: Vec<u32>,
    /// Per channel: position of the next op to start.
    pub(super) chan_next: Vec<u32>,
    /// Per channel: requests in flight.
    pub(super) chan_active: Vec<u32>,
    /// Per channel: its next op is in `heap`.
    pub(super) chan_queued: Vec<bool>,
    /// Per channel: receives with a program index below this are never held
    /// back by the window (a later go-ahead to their peer announces them).
    pub(super) exempt_below: Vec<u32>,
    /// Requests in flight allowed per channel.
    pub(super) window: u32,
    /// Ops completed.
    pub(super) done: usize,
}

impl Flow {
    /// O(ops + channels).
    pub(super) fn new(plan: &Plan) -> Flow {
        let ops = &plan.schedule.ops;
        let channels = plan.channels;
        let remaining = ops.iter().map(|o| o.deps.len() as u32).collect();
        // Channel op lists: count, prefix sums, place by position.
        let mut chan_start = vec![0u32; channels + 1];
        for &(c, _) in plan.chan.iter().flatten() {
            chan_start[c as usize + 1] += 1;
        }
        for c in 0..channels {
            chan_start[c + 1] += chan_start[c];
        }
        let mut chan_ops = vec![0u32; chan_start[channels] as usize];
        for (i, ch) in plan.chan.iter().enumerate() {
            if let Some((c, pos)) = *ch {
                chan_ops[(chan_start[c as usize] + pos) as usize] = i as u32;
            }
        }
        // Receives announced by a later go-ahead to their peer.
        let mut exempt_below = vec![0u32; channels];
        let mut last_goahead: HashMap<Rank, u32> = HashMap::new();
        for (i, op) in ops.iter().enumerate() {
            if let OpKind::Send {
                to,
                tag: Tag::Control,
                ..
            } = op.kind
            {
                last_goahead.insert(to, i as u32);
            }
        }
        if !last_goahead.is_empty() {
            for (op, ch) in ops.iter().zip(&plan.chan) {
                if let (OpKind::Recv { from, .. }, Some((c, _))) = (&op.kind, ch) {
                    if let Some(&g) = last_goahead.get(from) {
                        exempt_below[*c as usize] = g;
                    }
                }
            }
        }
        let mut flow = Flow {
            remaining,
            next_root: 0,
            heap: BinaryHeap::new(),
            chan_ops,
            chan_start,
            chan_next: vec![0; channels],
            chan_active: vec![0; channels],
            chan_queued: vec![false; channels],
            exempt_below,
            window: window(channels),
            done: 0,
        };
        for c in 0..channels {
            flow.offer(c);
        }
        flow
    }

    /// Queues channel `c`'s next op if it is ready and the channel's window
    /// has room (or the op is exempt from it).
    pub(super) fn offer(&mut self, c: usize) {
        if self.chan_queued[c] {
            return;
        }
        let k = self.chan_start[c] + self.chan_next[c];
        if k >= self.chan_start[c + 1] {
            return;
        }
        let op = self.chan_ops[k as usize];
        if self.remaining[op as usize] != 0 {
            return;
        }
        if self.chan_active[c] >= self.window && op >= self.exempt_below[c] {
            return;
        }
        self.heap.push(Reverse(op));
        self.chan_queued[c] = true;
    }

    /// The op to start next (smallest program index), without taking it.
    pub(super) fn peek(&mut self, plan: &Plan) -> Option<u32> {
        // Channel ops among the roots start through their channel.
        while let Some(&r) = plan.roots.get(self.next_root) {
            if plan.chan[r as usize].is_none() {
                break;
            }
            self.next_root += 1;
        }
        let root = plan.roots.get(self.next_root).copied();
        let queued = self.heap.peek().map(|r| r.0);
        match (root, queued) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Takes `op`, which [`Flow::peek`] just gave.
    pub(super) fn take(&mut self, plan: &Plan, op: u32) {
        if plan.roots.get(self.next_root) == Some(&op) {
            self.next_root += 1;
        } else {
            self.heap.pop();
        }
        if let Some((c, pos)) = plan.chan[op as usize] {
            let c = c as usize;
            debug_assert_eq!(self.chan_next[c], pos);
            self.chan_next[c] = pos + 1;
            self.chan_queued[c] = false;
        }
    }

    /// Op `i` (just taken) is in flight as a request: it counts against
    /// its channel's window.
    pub(super) fn posted(&mut self, plan: &Plan, i: u32) {
        if let Some((c, _)) = plan.chan[i as usize] {
            self.chan_active[c as usize] += 1;
        }
    }

    /// Op `i` was taken and issued: its channel's next op may be ready.
    pub(super) fn issued(&mut self, plan: &Plan, i: u32) {
        if let Some((c, _)) = plan.chan[i as usize] {
            self.offer(c as usize);
        }
    }

    /// The request of op `i` completed: the op completes and its channel's
    /// window has room for one more.
    pub(super) fn request_done(&mut self, plan: &Plan, i: u32) {
        if let Some((c, _)) = plan.chan[i as usize] {
            self.chan_active[c as usize] -= 1;
            self.offer(c as usize);
        }
        self.complete(plan, i);
    }

    /// Op `i` completed: its dependents may become ready.
    pub(super) fn complete(&mut self, plan: &Plan, i: u32) {
        self.done += 1;
        for &d in &plan.dependents[i as usize] {
            let r = &mut self.remaining[d as usize];
            *r -= 1;
            if *r == 0 {
                match plan.chan[d as usize] {
                    Some((c, _)) => self.offer(c as usize),
                    None => self.heap.push(Reverse(d)),
                }
            }
        }
    }
}
