//! colltune's own heap, apart from the program's: the global allocator of
//! the libraries a program loads (`libcolltune_preload.so`,
//! `libcolltune.so`), so that what colltune allocates and frees (the
//! table, a communicator's decisions, the temporaries of its set-up)
//! never leaves holes in the C heap that the program and its MPI library
//! allocate from.
//!
//! ```text
//!   glibc's heap (the program, MPI):  [ ... libnbc's schedule ....|top→ ]
//!   colltune's heap (mmap'd blocks):  [16][16][32][32][64]... [a large one]
//! ```
//!
//! Why it matters: libnbc builds each `MPI_Ibcast`'s schedule by
//! `calloc(4)` then a `realloc` per step. Carved from the top of the heap,
//! each `realloc` grows in place; taken from a hole a freed block of
//! colltune's left, each moves (a malloc, a copy, a free). Measured with
//! callgrind on one post (docs/measurements/2026-12-07-imb-nbc): 887
//! instructions of `realloc` per post plain, 1,131-1,433 with colltune's
//! blocks in the program's heap.
//!
//! Blocks of up to [`LARGEST_CLASS`] bytes come in power-of-two classes,
//! cut from [`CHUNK`]-byte mappings and kept on a free list per class for
//! reuse (never unmapped: colltune's peak, the table's parse, is what the
//! lists hold); larger ones are mappings of their own, unmapped when
//! freed. One lock guards the lists: colltune allocates at start-up and at
//! a communicator's first call, never per call.

use std::alloc::{GlobalAlloc, Layout};
use std::ptr::null_mut;
use std::sync::Mutex;

/// The smallest class, bytes (a free block holds the next one's address).
const SMALLEST_CLASS: usize = 16;
/// The largest class, bytes; larger blocks are mappings of their own.
pub const LARGEST_CLASS: usize = 64 * 1024;
/// Classes 16, 32, ..., [`LARGEST_CLASS`].
const CLASSES: usize = (LARGEST_CLASS / SMALLEST_CLASS).trailing_zeros() as usize + 1;
/// What one mapping for small blocks holds.
const CHUNK: usize = 1 << 20;
const PAGE: usize = 4096;

/// The free lists and the part of the current chunk not cut yet.
struct Lists {
    free: [usize; CLASSES],
    next: usize,
    end: usize,
}

/// colltune's heap (see the module doc).
pub struct PrivateHeap {
    lists: Mutex<Lists>,
}

impl PrivateHeap {
    pub const fn new() -> PrivateHeap {
        PrivateHeap {
            lists: Mutex::new(Lists {
                free: [0; CLASSES],
                next: 0,
                end: 0,
            }),
        }
    }
}

impl Default for PrivateHeap {
    fn default() -> Self {
        Self::new()
    }
}

/// The class of a block of `l` (None: a mapping of its own). A class's
/// blocks are aligned to their size (chunks are page-aligned and cut in
/// class-sized steps from an address aligned to the class).
fn class(l: Layout) -> Option<usize> {
    let need = l.size().max(l.align()).max(SMALLEST_CLASS);
    (need <= LARGEST_CLASS)
        .then(|| (need.next_power_of_two() / SMALLEST_CLASS).trailing_zeros() as usize)
}

fn class_size(c: usize) -> usize {
    SMALLEST_CLASS << c
}

/// `n` bytes of fresh zeroed pages (null on failure).
unsafe fn map(n: usize) -> *mut u8 {
    let p = libc::mmap(
        null_mut(),
        n,
        libc::PROT_READ | libc::PROT_WRITE,
        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
        -1,
        0,
    );
    if p == libc::MAP_FAILED {
        null_mut()
    } else {
        p.cast()
    }
}

fn pages(n: usize) -> usize {
    n.div_ceil(PAGE) * PAGE
}

unsafe impl GlobalAlloc for PrivateHeap {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let Some(c) = class(l) else {
            if l.align() > PAGE {
                return null_mut();
            }
            return map(pages(l.size()));
        };
        let size = class_size(c);
        let mut g = self.lists.lock().unwrap_or_else(|p| p.into_inner());
        let head = g.free[c];
        if head != 0 {
            // SAFETY: a free block of this class holds the next one.
            g.free[c] = *(head as *const usize);
            return head as *mut u8;
        }
        let start = g.next.next_multiple_of(size);
        if start == 0 || start + size > g.end {
            let fresh = map(CHUNK);
            if fresh.is_null() {
                return null_mut();
            }
            // The old chunk's tail is left uncut (at most one largest
            // class per chunk).
            g.next = fresh as usize;
            g.end = g.next + CHUNK;
            let start = g.next.next_multiple_of(size);
            g.next = start + size;
            return start as *mut u8;
        }
        g.next = start + size;
        start as *mut u8
    }

    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        let Some(c) = class(l) else {
            libc::munmap(p.cast(), pages(l.size()));
            return;
        };
        let mut g = self.lists.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: the block is at least SMALLEST_CLASS bytes and aligned to
        // its class, and no longer the caller's.
        *(p as *mut usize) = g.free[c];
        g.free[c] = p as usize;
    }

    unsafe fn realloc(&self, p: *mut u8, l: Layout, new_size: usize) -> *mut u8 {
        let new = Layout::from_size_align_unchecked(new_size, l.align());
        if class(l).is_some() && class(l) == class(new) {
            return p; // the block holds the new size already
        }
        let q = self.alloc(new);
        if !q.is_null() {
            std::ptr::copy_nonoverlapping(p, q, l.size().min(new_size));
            self.dealloc(p, l);
        }
        q
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_aligned_disjoint_reused_and_hold_what_was_written() {
        let h = PrivateHeap::new();
        let mut live: Vec<(*mut u8, Layout, u8)> = Vec::new();
        // Sizes across every class and beyond, alignments up to a page.
        let mut seed = 12345u64;
        for i in 0..4000u32 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let size = 1 + (seed >> 33) as usize % (if i % 50 == 0 { 300_000 } else { 3000 });
            let align = 1 << ((seed >> 20) % 13);
            let l = Layout::from_size_align(size, align).unwrap();
            let p = unsafe { h.alloc(l) };
            assert!(!p.is_null() && p as usize % align == 0, "{l:?}");
            let tag = i as u8;
            unsafe { std::ptr::write_bytes(p, tag, size) };
            live.push((p, l, tag));
            if seed % 3 == 0 {
                let (q, lq, t) = live.swap_remove((seed >> 40) as usize % live.len());
                let s = unsafe { std::slice::from_raw_parts(q, lq.size()) };
                assert!(s.iter().all(|&b| b == t), "a block was overwritten");
                unsafe { h.dealloc(q, lq) };
            }
        }
        for (p, l, t) in &live {
            let s = unsafe { std::slice::from_raw_parts(*p, l.size()) };
            assert!(s.iter().all(|b| b == t), "a block was overwritten");
        }
        // A freed block of a class comes back for the next of that class.
        let l = Layout::from_size_align(100, 8).unwrap();
        let p = unsafe { h.alloc(l) };
        unsafe { h.dealloc(p, l) };
        assert_eq!(unsafe { h.alloc(l) }, p);
    }

    #[test]
    fn realloc_keeps_the_contents_across_classes_and_mappings() {
        let h = PrivateHeap::new();
        let mut l = Layout::from_size_align(10, 1).unwrap();
        let mut p = unsafe { h.alloc(l) };
        unsafe { std::ptr::write_bytes(p, 7, 10) };
        for n in [12, 40, 5000, 200_000, 70_000, 20] {
            p = unsafe { h.realloc(p, l, n) };
            assert!(!p.is_null());
            let keep = l.size().min(n).min(10);
            let s = unsafe { std::slice::from_raw_parts(p, keep) };
            assert!(s.iter().all(|&b| b == 7), "{n}: {s:?}");
            l = Layout::from_size_align(n, 1).unwrap();
        }
        unsafe { h.dealloc(p, l) };
    }

    #[test]
    fn threads_share_it() {
        static H: PrivateHeap = PrivateHeap::new();
        let hs: Vec<_> = (0..4)
            .map(|t| {
                std::thread::spawn(move || {
                    for i in 0..2000usize {
                        let l = Layout::from_size_align(8 + (i * 37 + t) % 900, 8).unwrap();
                        let p = unsafe { H.alloc(l) };
                        unsafe { std::ptr::write_bytes(p, t as u8, l.size()) };
                        let s = unsafe { std::slice::from_raw_parts(p, l.size()) };
                        assert!(s.iter().all(|&b| b == t as u8));
                        unsafe { H.dealloc(p, l) };
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
    }
}
