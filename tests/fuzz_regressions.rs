//! Replays the fuzz corpus in CI: every file in `fuzz/corpus/<target>/` (the committed seed
//! corpus) and `fuzz/regressions/<target>/` (inputs that once crashed a target) goes through the
//! same checks the cargo-fuzz targets run (`fuzz/src/checks.rs`), and none may panic. Inputs
//! that found a specific bug also get a test of their own below, stating the expectation.
//!
//! Add a regression with `scripts/fuzz` (it copies new crash inputs into `fuzz/regressions/`).

#[path = "../fuzz/src/checks.rs"]
mod checks;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz")
}

/// The files of `fuzz/<kind>/<target>/`, sorted (none if the directory does not exist).
fn inputs(kind: &str, target: &str) -> Vec<PathBuf> {
    let dir = fuzz_dir().join(kind).join(target);
    let mut files: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_file() && p.extension().is_none_or(|e| e != "md"))
            .collect(),
        Err(_) => Vec::new(),
    };
    files.sort();
    files
}

/// Runs `target`'s check on every input of `kind`, collecting every failure before failing.
fn replay(kind: &str) -> usize {
    let mut failures = Vec::new();
    let mut count = 0;
    for target in checks::TARGETS {
        for path in inputs(kind, target) {
            let data = std::fs::read(&path).expect("read fuzz input");
            count += 1;
            if let Err(panic) = catch_unwind(AssertUnwindSafe(|| checks::run(target, &data))) {
                let message = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                failures.push(format!("{}: {message}", path.display()));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {count} {kind} inputs panic:\n{}",
        failures.len(),
        failures.join("\n")
    );
    count
}

#[test]
fn seed_corpus_does_not_panic() {
    let n = replay("corpus");
    assert!(n > 0, "fuzz/corpus/ holds no inputs");
}

#[test]
fn crash_regressions_do_not_panic() {
    replay("regressions");
}

#[test]
fn every_target_has_a_seed_corpus() {
    for target in checks::TARGETS {
        assert!(
            !inputs("corpus", target).is_empty(),
            "fuzz/corpus/{target}/ is empty"
        );
    }
}

/// Found by the `values` target (`fuzz/regressions/values/`): storage's memcomparable key
/// encoding accepts the decimal 10 x 10^2147483648 (scale `i32::MIN`, unscaled `0a`; any
/// unscaled value with trailing zeros and a scale near `i32::MIN` will do), but
/// `decode_clustering` rejects the key it produced with "corrupt data: decimal scale overflow"
/// (`storage/src/key/value.rs`, `decode_decimal`: `digits.len() - exponent` is below
/// `i32::MIN`). A client can bind such a value for a decimal clustering column, the write
/// succeeds, and every read of that partition then fails. Expected: the key decodes back to a
/// serialization of the same number, which encodes to the same key.
#[test]
fn decimal_clustering_key_with_minimum_scale_round_trips() {
    use cql::types::{DataType, NativeType, Value};
    use storage::key::{decode_clustering, encode_clustering};
    use storage::Order;

    let value: &[u8] = &[0x80, 0x00, 0x00, 0x00, 0x0a];
    for order in [Order::Asc, Order::Desc] {
        let columns = [(DataType::Native(NativeType::Decimal), order)];
        let mut key = Vec::new();
        // Refusing the value cleanly (the write fails with InvalidRequest) is as good as a
        // round trip: what must never happen is a stored key that cannot be read back.
        if let Err(e) = encode_clustering(&columns, &[value], &mut key) {
            assert!(e.to_string().contains("scale out of range"), "{e}");
            continue;
        }
        let back = decode_clustering(&columns, &key)
            .unwrap_or_else(|e| panic!("{order:?} key {key:02x?} does not decode: {e}"));
        Value::decode(&columns[0].0, &back[0]).expect("a valid decimal");
        let mut again = Vec::new();
        encode_clustering(&columns, &back, &mut again).expect("encodes again");
        assert_eq!(again, key, "{order:?}: decoded to {:02x?}", back[0]);
    }
}
