#![no_main]

// A compressed content: the compressor is the one its first 4 bytes name (as the index entry of a
// sound content does), the output bounded at 1 MiB.
libfuzzer_sys::fuzz_target!(|bytes: &[u8]| {
    let id = bytes
        .first_chunk::<4>()
        .map_or(0, |h| u32::from_be_bytes(*h));
    let _ = ark_kopia::compression::decompress(id, bytes, 1 << 20, "fuzz");
});
