#![no_main]

// A directory object's JSON.
libfuzzer_sys::fuzz_target!(|bytes: &[u8]| {
    let _ = ark_kopia::snapshot::parse_directory(bytes, "fuzz");
});
