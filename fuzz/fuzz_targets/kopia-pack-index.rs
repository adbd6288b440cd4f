#![no_main]

use std::sync::LazyLock;

use ark_kopia::crypto::{self, ContentCrypter};

/// The keys the seeds' packs were written with (`crates/ark-kopia/examples/fuzz_seeds.rs`).
static CRYPTER: LazyLock<ContentCrypter> = LazyLock::new(|| {
    ContentCrypter::new(crypto::HASH, crypto::ENCRYPTION, &[1; 32], &[2; 32]).unwrap()
});

// A whole pack blob, read for the local index at its end.
libfuzzer_sys::fuzz_target!(|bytes: &[u8]| {
    let _ = ark_kopia::content::local_index(&CRYPTER, "fuzz", bytes);
});
