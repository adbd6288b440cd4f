//! kopia's `DYNAMIC-4M-BUZHASH` splitter (`repo/splitter/splitter_buzhash32.go`): content-defined
//! chunk boundaries, so that ark, kopia and Velero cut the same file into the same chunks and
//! deduplicate against each other. Chunks are 2 MiB to 8 MiB, 4 MiB on average.

/// The rolling window, in bytes.
const WINDOW: usize = 64;

/// `buzhash32.GenerateHashes(1)` of `github.com/chmduquesne/rollinghash` v4: Go's `math/rand`
/// seeded with 1, one value per byte. The values are data of the format, as fixed as the format.
#[rustfmt::skip]
const BYTE_HASH: [u32; 256] = [
    0x07fcfd52, 0x5f3f164f, 0x6695721d, 0x7b4d7c03, 0x49c6e2d1, 0x0d1d68d8, 0x7916001e, 0x22c4d294,
    0x392907a0, 0x189deb99, 0xf3875d04, 0x95e94627, 0xba517936, 0x83c471d4, 0x7cb3ad0b, 0xa42655d9,
    0x7c4e0b68, 0xd4491d1b, 0x25632186, 0xa9d78d73, 0x169c1121, 0xbb158644, 0xb68e6a3f, 0x759805f5,
    0x2cdf5b8a, 0x57d29245, 0xc5d6d268, 0x6b83d0e2, 0x7674cb74, 0xb068d9db, 0xbb9457d8, 0xa15d523b,
    0x794209ff, 0x9da1d7eb, 0x5a25e0cb, 0xf840ec4b, 0x36d4ff9b, 0xf4a5ee3b, 0x5ad145f4, 0xf6740304,
    0x3f71f8cb, 0x91018d7c, 0xfccae224, 0xb186b51f, 0x7d9e8fbc, 0x93f93f33, 0xf63a5b6f, 0x19476c36,
    0xbc897d06, 0x169873f5, 0x724c7af1, 0x581eeb39, 0x2257bb7d, 0x6f269a28, 0xbe8e9981, 0x7039374b,
    0x25416fed, 0xded7e411, 0x6678e7aa, 0x244fcd36, 0x56aa6b86, 0xde4561ad, 0x3e99b0a8, 0xbed80a3a,
    0xe58348b0, 0xaf63e58d, 0x406aec9d, 0xc233f007, 0xa5ead0bd, 0x050143a6, 0x738b6829, 0x3699caf3,
    0x967cd710, 0x06f665a6, 0x25fd3d7f, 0x0fd6e479, 0x26fbf29b, 0x16de4c35, 0x2bf3394b, 0x4af864ba,
    0x1cb9e6c6, 0x41439089, 0x69a39144, 0xc34f182d, 0x421657ff, 0xf9fc6568, 0x8b02c917, 0x6c9c64b7,
    0x83d17909, 0xea3d4ca5, 0xaf635d47, 0x7fc78769, 0xbe14186f, 0x3539b1ea, 0xe9174548, 0xc051e18a,
    0x07b73658, 0x29ec300c, 0xa250bf34, 0xa7ed5d97, 0xfe3dea79, 0xb8b352f7, 0xc9b344e9, 0x8e5f0475,
    0x1941e52a, 0x2694763d, 0x6b40eabc, 0x8485d68b, 0x336eacca, 0x4399a363, 0x67149b9c, 0xae10a901,
    0x5a5ffefb, 0x563b26de, 0x6f00f02b, 0x9f06397d, 0x545836c4, 0x31d6416b, 0x12f4128d, 0x752f33ff,
    0x4a305605, 0x0c8dc214, 0x72521a90, 0x8eb3e4a1, 0x83efc6c6, 0x090ec04f, 0xc1540864, 0xec2c8aaa,
    0x70ab53ba, 0x38d3b494, 0x878d4063, 0xa317ae3f, 0x3cb62f07, 0xf360412c, 0x4ffbf3a9, 0x22d554b4,
    0x3f190476, 0x0796a710, 0xf5c353cf, 0x04f59bb7, 0x2d230176, 0xe2d6a9ce, 0x3f1d7427, 0xafd915bb,
    0xb01aa47d, 0xcde2c269, 0x7417bf38, 0x1e094f9a, 0x55ece0ea, 0xcb94539b, 0x13d346b5, 0x54e0c0c1,
    0x6db30e37, 0xdc02b390, 0xa6e222f5, 0xe2f8c1fe, 0x2e166bdf, 0x67588a74, 0x21898f34, 0x4c330f1d,
    0x19af53ba, 0x70658b94, 0x133c9673, 0x4efeeadd, 0x0f212551, 0x070f0914, 0x6f241c57, 0xf13e41b7,
    0x3be70cb0, 0xf4b6f47f, 0x20f31127, 0x6551cb89, 0x289cbd2c, 0x8946f23d, 0x40a79c3b, 0x03c6d982,
    0x0365790c, 0x0cf52517, 0x0bb131e8, 0x3da5475c, 0x139efcca, 0xbcd44eb4, 0xa54af747, 0xb73c32ed,
    0x9f6c47ac, 0xe8ba8f22, 0x54043a66, 0x3b0a7f20, 0xb4926431, 0xe17c02d5, 0x8f0d2558, 0x014fbff2,
    0x7f803594, 0x79b76fbe, 0x33fe2656, 0x792c8ee8, 0x6b41292d, 0xfdff9c32, 0x82093298, 0x59483870,
    0xb2d5a113, 0x2dd96e5a, 0x5b8e56a9, 0xebd9dda9, 0x04f9ce92, 0xcb440950, 0xa67e52b1, 0x49f6d261,
    0x92417fc3, 0x1c3b6bd9, 0xb027b7e0, 0x1f765a41, 0x44c9ab40, 0x45d99121, 0xfd7a84af, 0x99b75788,
    0xe3abff4a, 0xa88aa67f, 0x736e41cc, 0x9cbcbe5e, 0x7b3ccebc, 0xe1b7fa93, 0x315ae6af, 0x9cced2e2,
    0x19ea0f2f, 0xa9770722, 0x84a6bfdc, 0x88f03f07, 0xa44a03a4, 0x27a6b885, 0xb580c8ba, 0x018153da,
    0xb648e604, 0x51180278, 0x893a310f, 0x728f5f4c, 0x37f5198b, 0x3cc0ea9b, 0xe39d02db, 0x13883142,
    0xca599392, 0xc12d154e, 0xc176163d, 0x5c92e2b8, 0xf9f95ede, 0xb802bdfc, 0x8a928585, 0xdca6e10b,
    0x887953e8, 0x48b9e962, 0xe533e9a3, 0x5e0ce6e5, 0x1dba77ae, 0xc8214b8a, 0x53b428d7, 0x4cf20a65,
];

/// One object's splitter: feed it the object's bytes in any pieces, it names where chunks end.
pub struct Splitter {
    window: [u8; WINDOW],
    oldest: usize,
    sum: u32,
    count: usize,
    mask: u32,
    min_size: usize,
    max_size: usize,
}

impl Default for Splitter {
    fn default() -> Self {
        Self::new(4 << 20)
    }
}

impl Splitter {
    /// A splitter of average chunk size `average` (a power of two), over a window of zeros.
    pub fn new(average: usize) -> Self {
        let mut sum = 0u32;
        for _ in 0..WINDOW {
            sum = sum.rotate_left(1) ^ BYTE_HASH[0];
        }
        Splitter {
            window: [0; WINDOW],
            oldest: 0,
            sum,
            count: 0,
            mask: (average - 1) as u32,
            min_size: average / 2,
            max_size: average * 2,
        }
    }

    /// The largest chunk this splitter makes.
    pub fn max_size(&self) -> usize {
        self.max_size
    }

    fn roll(&mut self, c: u8) {
        let outgoing = BYTE_HASH[self.window[self.oldest] as usize];
        self.window[self.oldest] = c;
        self.oldest = (self.oldest + 1) % WINDOW;
        // A window of 64 bytes rotates the outgoing byte's hash by 64 mod 32 = 0.
        self.sum = self.sum.rotate_left(1) ^ outgoing ^ BYTE_HASH[c as usize];
    }

    /// Where in `b` the current chunk ends (the length of `b` it takes), or `None` if it goes on
    /// past `b`. kopia's `NextSplitPoint`, step for step: below the minimum size only the last
    /// window's bytes are rolled, which leaves the same state as rolling them all.
    pub fn next_split_point(&mut self, mut b: &[u8]) -> Option<usize> {
        let mut fast = 0;
        let left = self.min_size as isize - self.count as isize - 1;
        if left > 0 {
            fast = (left as usize).min(b.len());
            for &c in &b[fast.saturating_sub(WINDOW)..fast] {
                self.roll(c);
            }
            self.count += fast;
            b = &b[fast..];
        }
        if self.max_size > self.count {
            let take = (self.max_size - self.count).min(b.len());
            for (i, &c) in b[..take].iter().enumerate() {
                self.roll(c);
                self.count += 1;
                if self.sum & self.mask == 0 {
                    self.count = 0;
                    return Some(fast + i + 1);
                }
            }
            fast += take;
        }
        if self.count >= self.max_size {
            self.count = 0;
            return Some(fast);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunks(data: &[u8], piece: usize) -> Vec<usize> {
        let mut s = Splitter::default();
        let mut lengths = Vec::new();
        let mut current = 0;
        for mut part in data.chunks(piece) {
            while let Some(n) = s.next_split_point(part) {
                lengths.push(current + n);
                current = 0;
                part = &part[n..];
            }
            current += part.len();
        }
        if current > 0 {
            lengths.push(current);
        }
        lengths
    }

    #[test]
    fn chunk_boundaries_do_not_depend_on_how_the_bytes_arrive() {
        let mut data = vec![0u8; 24 << 20];
        let mut x = 0x9e37_79b9_u32;
        for b in data.iter_mut() {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            *b = x as u8;
        }
        let whole = chunks(&data, data.len());
        assert_eq!(whole.iter().sum::<usize>(), data.len());
        assert!(
            whole[..whole.len() - 1]
                .iter()
                .all(|&n| (2 << 20..=8 << 20).contains(&n)),
            "{whole:?}"
        );
        assert!(whole.len() > 4, "{whole:?}");
        assert_eq!(chunks(&data, 65536), whole);
        assert_eq!(chunks(&data, 1000), whole);
        assert_eq!(chunks(&data, 63), whole);
    }

    #[test]
    fn zeros_split_at_the_minimum_size() {
        // A window of zeros hashes to a value whose low 22 bits are zero: every chunk of zeros
        // ends as soon as it may (the oracle tests show kopia cuts them the same).
        let data = vec![0u8; 20 << 20];
        assert_eq!(chunks(&data, 1 << 20), [2 << 20; 10]);
    }
}
