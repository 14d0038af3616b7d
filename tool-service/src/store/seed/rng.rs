//! A tiny deterministic random generator (SplitMix64) and seed derivation, so
//! that a data set depends only on its `SeedSpec`, never on a library version.

/// SplitMix64: fast, stable, good enough for plausible test data.
pub(crate) struct Rng(u64);

impl Rng {
    /// A generator for `seed` mixed with every part of `labels`.
    pub(crate) fn derive(seed: u64, labels: &[&str]) -> Rng {
        let mut state = seed ^ 0x9e37_79b9_7f4a_7c15;
        for label in labels {
            // FNV-1a over the label, folded into the state.
            let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
            for byte in label.bytes() {
                hash ^= u64::from(byte);
                hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
            }
            state = (state ^ hash)
                .rotate_left(27)
                .wrapping_mul(0x94d0_49bb_1331_11eb);
        }
        Rng(state)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (0 when `n` is 0).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        // Multiply-shift: unbiased enough for test data, no division.
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in `lo..hi` (`lo` when the range is empty).
    pub(crate) fn range(&mut self, lo: i64, hi: i64) -> i64 {
        if hi <= lo {
            return lo;
        }
        lo + self.below(hi.abs_diff(lo)) as i64
    }

    /// True with probability `percent`/100.
    pub(crate) fn percent(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// One element of a non-empty slice (the first when empty is impossible).
    pub(crate) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        let index = self.below(items.len() as u64) as usize;
        &items[index.min(items.len().saturating_sub(1))]
    }
}

#[cfg(test)]
mod tests {
    use super::Rng;

    #[test]
    fn same_labels_same_sequence() {
        let mut a = Rng::derive(7, &["loc_1", "2025-01-01"]);
        let mut b = Rng::derive(7, &["loc_1", "2025-01-01"]);
        let mut c = Rng::derive(7, &["loc_1", "2025-01-02"]);
        let (x, y, z) = (a.next_u64(), b.next_u64(), c.next_u64());
        assert_eq!(x, y);
        assert_ne!(x, z);
        assert!((0..1000).all(|_| a.range(3, 9) < 9 && a.range(3, 9) >= 3));
    }
}
