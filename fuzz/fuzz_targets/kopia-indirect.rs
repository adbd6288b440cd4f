#![no_main]

use std::sync::LazyLock;

use ark_kopia::object::ObjectId;

static ID: LazyLock<ObjectId> =
    LazyLock::new(|| ObjectId::parse("Ix0123456789abcdef0123456789abcdef").unwrap());

// An indirect object's chunk list.
libfuzzer_sys::fuzz_target!(|bytes: &[u8]| {
    let _ = ark_kopia::object::parse_indirect(bytes, *ID);
});
