#![no_main]

// `kopia.repository` as read from a bucket; its password's key (scrypt) is not derived: too slow.
libfuzzer_sys::fuzz_target!(|bytes: &[u8]| {
    let _ = ark_kopia::format::FormatBlob::parse(bytes);
});
