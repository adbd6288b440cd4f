#![no_main]

// An index blob (v2), as decrypted.
libfuzzer_sys::fuzz_target!(|bytes: &[u8]| {
    let _ = ark_kopia::index::parse(bytes, "fuzz", |_| {});
});
