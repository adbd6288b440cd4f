//! scrypt (RFC 7914, p = 1), kopia's derivation of a password's key (N = 65536, r = 8), in a
//! quarter of the memory it usually takes. ROMix's first loop makes N blocks of 1 KiB that its
//! second loop reads back in an order it cannot know beforehand; the usual way keeps all of them
//! (64 MiB). This keeps every [`KEEP_EVERY`]th and, when another is read, makes it again from the
//! one kept before it (scrypt's known time-memory trade-off): the same key, for 16 MiB and 1.75x
//! the block mixes (about 0.2 s). A node agent opens a repository per namespace it serves, and the
//! 64 MiB were its peak memory whenever it did.

use sha2::Sha256;

/// One block of V kept in this many; the others are made again when read.
const KEEP_EVERY: usize = 4;
/// Words in a Salsa20 block (64 bytes).
const SALSA_WORDS: usize = 16;

/// Fills `key` with scrypt(`password`, `salt`, N = 2^`log_n`, `r`, p = 1).
pub fn derive(password: &[u8], salt: &[u8], log_n: u8, r: usize, key: &mut [u8]) {
    let mut bytes = vec![0u8; 128 * r];
    pbkdf2::pbkdf2_hmac::<Sha256>(password, salt, 1, &mut bytes);
    let mut block: Vec<u32> = bytes
        .chunks_exact(4)
        .map(|w| u32::from_le_bytes(w.try_into().expect("4 bytes")))
        .collect();
    ro_mix(&mut block, 1 << log_n);
    for (out, word) in bytes.chunks_exact_mut(4).zip(&block) {
        out.copy_from_slice(&word.to_le_bytes());
    }
    pbkdf2::pbkdf2_hmac::<Sha256>(password, &bytes, 1, key);
}

/// ROMix over `x` (2r Salsa20 blocks), N = `n`, keeping one block of V in [`KEEP_EVERY`].
fn ro_mix(x: &mut Vec<u32>, n: usize) {
    let len = x.len();
    let mut kept = vec![0u32; n.div_ceil(KEEP_EVERY) * len];
    let mut mixed = vec![0u32; len];
    for i in 0..n {
        if i % KEEP_EVERY == 0 {
            kept[i / KEEP_EVERY * len..][..len].copy_from_slice(x);
        }
        block_mix(x, &mut mixed);
        std::mem::swap(x, &mut mixed);
    }
    let mut v = vec![0u32; len];
    for _ in 0..n {
        // Integerify: the first word of the last Salsa20 block, modulo N (a power of two).
        let j = x[len - SALSA_WORDS] as usize & (n - 1);
        v.copy_from_slice(&kept[j / KEEP_EVERY * len..][..len]);
        for _ in 0..j % KEEP_EVERY {
            block_mix(&v, &mut mixed);
            std::mem::swap(&mut v, &mut mixed);
        }
        for (word, other) in x.iter_mut().zip(&v) {
            *word ^= other;
        }
        block_mix(x, &mut mixed);
        std::mem::swap(x, &mut mixed);
    }
}

/// BlockMix with Salsa20/8: each block, chained, goes to the even blocks' half of the output
/// if its index is even, to the odd ones' half otherwise.
fn block_mix(input: &[u32], output: &mut [u32]) {
    let blocks = input.len() / SALSA_WORDS;
    let mut x: [u32; SALSA_WORDS] = input[(blocks - 1) * SALSA_WORDS..]
        .try_into()
        .expect("a whole block");
    for (i, block) in input.chunks_exact(SALSA_WORDS).enumerate() {
        for (word, other) in x.iter_mut().zip(block) {
            *word ^= other;
        }
        salsa20_8(&mut x);
        let at = if i % 2 == 0 {
            i / 2
        } else {
            blocks / 2 + i / 2
        };
        output[at * SALSA_WORDS..][..SALSA_WORDS].copy_from_slice(&x);
    }
}

/// The Salsa20/8 core: four double rounds, then the input added back.
fn salsa20_8(block: &mut [u32; SALSA_WORDS]) {
    fn quarter(x: &mut [u32; SALSA_WORDS], a: usize, b: usize, c: usize, d: usize) {
        x[b] ^= x[a].wrapping_add(x[d]).rotate_left(7);
        x[c] ^= x[b].wrapping_add(x[a]).rotate_left(9);
        x[d] ^= x[c].wrapping_add(x[b]).rotate_left(13);
        x[a] ^= x[d].wrapping_add(x[c]).rotate_left(18);
    }
    let mut x = *block;
    for _ in 0..4 {
        quarter(&mut x, 0, 4, 8, 12);
        quarter(&mut x, 5, 9, 13, 1);
        quarter(&mut x, 10, 14, 2, 6);
        quarter(&mut x, 15, 3, 7, 11);
        quarter(&mut x, 0, 1, 2, 3);
        quarter(&mut x, 5, 6, 7, 4);
        quarter(&mut x, 10, 11, 8, 9);
        quarter(&mut x, 15, 12, 13, 14);
    }
    for (word, mixed) in block.iter_mut().zip(x) {
        *word = word.wrapping_add(mixed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn derived(password: &[u8], salt: &[u8], log_n: u8, r: usize, len: usize) -> Vec<u8> {
        let mut key = vec![0u8; len];
        derive(password, salt, log_n, r, &mut key);
        key
    }

    fn by_the_scrypt_crate(password: &[u8], salt: &[u8], log_n: u8, r: u32, len: usize) -> Vec<u8> {
        let mut key = vec![0u8; len];
        let params = scrypt::Params::new(log_n, r, 1, len).unwrap();
        scrypt::scrypt(password, salt, &params, &mut key).unwrap();
        key
    }

    #[test]
    fn the_first_test_vector_of_rfc_7914_comes_out() {
        let expected = hex::decode(
            "77d6576238657b203b19ca42c18a0497f16b4844e3074ae8dfdffa3fede21442\
             fcd0069ded0948f8326a753a0fc81f17e8d3e0fb2e0d3628cf35e20c38d18906",
        )
        .unwrap();
        assert_eq!(derived(b"", b"", 4, 1, 64), expected);
    }

    #[test]
    fn keys_are_the_usual_scrypt_s_at_every_n_and_r() {
        for log_n in 1..=10 {
            for r in [1, 2, 8] {
                assert_eq!(
                    derived(b"pass word", b"a repository's unique id", log_n, r, 32),
                    by_the_scrypt_crate(
                        b"pass word",
                        b"a repository's unique id",
                        log_n,
                        r as u32,
                        32
                    ),
                    "N = 2^{log_n}, r = {r}"
                );
            }
        }
    }

    #[test]
    fn kopia_s_parameters_give_the_usual_scrypt_s_key() {
        let salt = [7u8; 32];
        assert_eq!(
            derived(b"static-passw0rd", &salt, 16, 8, 32),
            by_the_scrypt_crate(b"static-passw0rd", &salt, 16, 8, 32)
        );
    }
}
