#![no_main]

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| ark_api::fuzz::backup_metadata(bytes));
