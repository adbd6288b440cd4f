#![no_main]

// A manifest content: the fuzzer's bytes as they are (the gzip layer), and gzipped (the JSON
// within, which the seeds hold).
libfuzzer_sys::fuzz_target!(|bytes: &[u8]| {
    let _ = ark_kopia::manifest::parse_content(bytes, "fuzz");
    let _ = ark_kopia::manifest::parse_content(&ark_server::fuzz::gzip(bytes), "fuzz");
});
