#![no_main]

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| ark_server::fuzz::resource_policies(bytes));
