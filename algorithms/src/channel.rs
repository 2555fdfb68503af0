//! Channels: how messages meet, numbered once for every execution.
//!
//! A rank's *channel* is one direction of its traffic with one peer under
//! one tag: its sends to `q` with tag `t`, or its receives from `q` with tag
//! `t`. MPI's non-overtaking rule makes each a queue: the k-th send of rank
//! `r`'s channel (send, `q`, `t`) meets the k-th receive of rank `q`'s
//! channel (receive, `r`, `t`), its [`Channel::mirror`]. So the MPI
//! executor, the simulator and the checker all number a rank's channels the
//! same way, in order of first use, and each send or receive by its
//! position in its channel:
//!
//! ```text
//!   rank 0's ops:  send→1 Data   recv←2 Data   send→1 Data   send→1 Control   copy
//!   channel:       0             1             0             2                -
//!   position:      0             0             1             0                -
//! ```

use crate::schedule::{Op, OpKind, Rank, Tag};

/// Which way a channel's messages go, seen from its rank.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Direction {
    Send,
    Recv,
}

/// One direction of a rank's traffic with one peer under one tag.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Channel {
    pub dir: Direction,
    pub peer: Rank,
    pub tag: Tag,
}

impl Channel {
    /// The channel of a send or a receive; None for any other op.
    pub fn of(kind: &OpKind) -> Option<Channel> {
        match *kind {
            OpKind::Send { to, tag, .. } => Some(Channel {
                dir: Direction::Send,
                peer: to,
                tag,
            }),
            OpKind::Recv { from, tag, .. } => Some(Channel {
                dir: Direction::Recv,
                peer: from,
                tag,
            }),
            _ => None,
        }
    }

    /// The channel of rank `self.peer` that this channel of rank `me` meets.
    pub fn mirror(self, me: Rank) -> Channel {
        Channel {
            dir: match self.dir {
                Direction::Send => Direction::Recv,
                Direction::Recv => Direction::Send,
            },
            peer: me,
            tag: self.tag,
        }
    }

    /// The channel as one integer, distinct for every channel of a rank:
    /// `peer << 8 | tag` for a receive, that plus `1 << 40` for a send (so
    /// sorted keys list receives first, by peer, then tag).
    pub fn key(self) -> u64 {
        let dir = match self.dir {
            Direction::Send => 1 << 40,
            Direction::Recv => 0,
        };
        dir | (self.peer.0 as u64) << 8 | self.tag as u8 as u64
    }
}

/// Numbers one rank's channels in order of first use and counts the
/// positions in each. `clear` starts the next rank without freeing memory
/// (an open-addressing table: the simulator numbers 16,384 ranks a call).
#[derive(Clone, Debug, Default)]
pub struct ChannelNumbering {
    /// (key, number); key `u64::MAX`: empty. Length a power of two.
    slots: Vec<(u64, u32)>,
    /// Slots in use, to clear them.
    used: Vec<u32>,
    /// Ops numbered so far in each channel, by number.
    lens: Vec<u32>,
}

impl ChannelNumbering {
    pub fn new() -> Self {
        Self::default()
    }

    /// Forgets every channel (for the next rank).
    pub fn clear(&mut self) {
        for &u in &self.used {
            self.slots[u as usize].0 = u64::MAX;
        }
        self.used.clear();
        self.lens.clear();
    }

    /// Numbers the next op of `ch`: (channel number, position in the
    /// channel). A channel not seen yet gets the next number, position 0.
    pub fn next(&mut self, ch: Channel) -> (u32, u32) {
        let id = self.id(ch.key());
        let len = &mut self.lens[id as usize];
        let pos = *len;
        *len += 1;
        (id, pos)
    }

    /// Channels numbered since the last `clear`.
    pub fn len(&self) -> usize {
        self.lens.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lens.is_empty()
    }

    /// The number of `key`, the next one (and a new channel) if unseen.
    fn id(&mut self, key: u64) -> u32 {
        if (self.used.len() + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut h = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize & mask;
        loop {
            let s = &mut self.slots[h];
            if s.0 == key {
                return s.1;
            }
            if s.0 == u64::MAX {
                let next = self.lens.len() as u32;
                *s = (key, next);
                self.used.push(h as u32);
                self.lens.push(0);
                return next;
            }
            h = (h + 1) & mask;
        }
    }

    fn grow(&mut self) {
        let old: Vec<(u64, u32)> = self.used.iter().map(|&u| self.slots[u as usize]).collect();
        let cap = (self.slots.len() * 2).max(64);
        self.slots = vec![(u64::MAX, 0); cap];
        self.used.clear();
        let mask = cap - 1;
        for (key, id) in old {
            let mut h = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize & mask;
            while self.slots[h].0 != u64::MAX {
                h = (h + 1) & mask;
            }
            self.slots[h] = (key, id);
            self.used.push(h as u32);
        }
    }
}

/// Each op's (channel number, position) (None: not a send or a receive)
/// and the number of channels, for one rank's ops.
pub fn number_channels(ops: &[Op]) -> (Vec<Option<(u32, u32)>>, usize) {
    let mut numbering = ChannelNumbering::new();
    let chan = ops
        .iter()
        .map(|op| Channel::of(&op.kind).map(|ch| numbering.next(ch)))
        .collect();
    (chan, numbering.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::Builder;
    use crate::schedule::{Post, Region, SendMode};

    #[test]
    fn channels_are_numbered_by_first_use() {
        // The example of the module's header.
        let mut b = Builder::new();
        b.send(1, Region::data(0, 4), Post::Immediate);
        b.recv(2, Region::data(4, 4), Post::Immediate);
        b.send(1, Region::data(0, 4), Post::Immediate);
        b.send_tagged(
            1,
            Region::data(0, 0),
            Tag::Control,
            SendMode::Standard,
            Post::Immediate,
        );
        b.copy(Region::data(0, 4), Region::data(8, 4));
        let (chan, n) = number_channels(&b.finish().ops);
        assert_eq!(
            chan,
            [Some((0, 0)), Some((1, 0)), Some((0, 1)), Some((2, 0)), None]
        );
        assert_eq!(n, 3);
    }

    #[test]
    fn numbering_survives_growth_and_clear() {
        let mut n = ChannelNumbering::new();
        let ch = |dir, peer| Channel {
            dir,
            peer: Rank(peer),
            tag: Tag::Data,
        };
        for round in 0..3 {
            for q in 0..1000 {
                assert_eq!(n.next(ch(Direction::Send, q)), (2 * q, round));
                assert_eq!(n.next(ch(Direction::Recv, q)), (2 * q + 1, round));
            }
        }
        assert_eq!(n.len(), 2000);
        n.clear();
        assert!(n.is_empty());
        assert_eq!(n.next(ch(Direction::Recv, 7)), (0, 0));
    }

    #[test]
    fn a_channel_meets_its_mirror() {
        let c = Channel {
            dir: Direction::Send,
            peer: Rank(5),
            tag: Tag::Control,
        };
        let m = c.mirror(Rank(2));
        assert_eq!(
            m,
            Channel {
                dir: Direction::Recv,
                peer: Rank(2),
                tag: Tag::Control
            }
        );
        assert_eq!(m.mirror(Rank(5)), c);
        assert_eq!(c.key(), 1 << 40 | 5 << 8 | 1);
        assert_eq!(m.key(), 2 << 8 | 1);
    }
}
