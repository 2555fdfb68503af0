//! Deterministic test data: every byte depends on (seed, offset), so a
//! misplaced, missing or stale byte is caught.

/// The byte at `offset` of the buffer seeded with `seed`.
#[inline]
pub fn byte(seed: u64, offset: u64) -> u8 {
    // splitmix64 finaliser over (seed, offset)
    let mut z = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(offset)
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) as u8
}

/// Fills `buf` with the pattern of `seed`.
pub fn fill(buf: &mut [u8], seed: u64) {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = byte(seed, i as u64);
    }
}

/// Fills `buf` with the complement of the pattern of `seed`: every byte
/// differs from the one expected, so a byte never written is always caught.
pub fn fill_wrong(buf: &mut [u8], seed: u64) {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = !byte(seed, i as u64);
    }
}

/// The first offset where `buf` differs from the pattern of `seed`, with the
/// byte found and the byte expected.
pub fn first_mismatch(buf: &[u8], seed: u64) -> Option<(usize, u8, u8)> {
    buf.iter()
        .enumerate()
        .find(|(i, &b)| b != byte(seed, *i as u64))
        .map(|(i, &b)| (i, b, byte(seed, i as u64)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_differ_and_complements_never_match() {
        let mut a = vec![0u8; 4096];
        fill(&mut a, 1);
        assert_eq!(first_mismatch(&a, 1), None);
        assert!(first_mismatch(&a, 2).is_some());
        fill_wrong(&mut a, 1);
        assert!(a.iter().enumerate().all(|(i, &b)| b != byte(1, i as u64)));
        // shifted data is caught
        let mut s = vec![0u8; 4096];
        fill(&mut s, 1);
        s.rotate_left(1);
        assert_eq!(first_mismatch(&s, 1).map(|m| m.0), Some(0));
    }
}
