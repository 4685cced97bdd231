//! The `values` fuzz target: `ringdb_fuzz::checks::values` on every input (see ../README.md).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ringdb_fuzz::checks::values(data));
