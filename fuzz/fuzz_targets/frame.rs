//! The `frame` fuzz target: `ringdb_fuzz::checks::frame` on every input (see ../README.md).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ringdb_fuzz::checks::frame(data));
