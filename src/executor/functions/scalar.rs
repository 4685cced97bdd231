//! The scalar native functions: `now`/`current*`, `uuid`, the timeuuid and date conversions of
//! `TimeFcts`, and the `xAsBlob`/`blobAsX` functions of `BytesConversionFcts`.
//!
//! Time conversions follow Cassandra's serializers exactly: a timeuuid's instant is its 60-bit
//! count of 100 ns ticks since 1582-10-15, divided by 10 000; a date is
//! `Duration.ofMillis(ms).toDays()` (whole seconds rounded down, then days toward zero) plus
//! 2^31; `minTimeuuid(t)` is the first tick of millisecond `t` with clock sequence and node
//! `0x8080808080808080`, `maxTimeuuid(t)` the last with `0x7f7f7f7f7f7f7f7f`.

use super::{resolve, ArgKind, FunctionArg};
use crate::error::QueryError;
use cql::types::{DataType, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};
use uuid::Uuid;

/// The UUID epoch (1582-10-15) in Unix milliseconds (`UUIDGen.START_EPOCH`).
const START_EPOCH: i64 = -12_219_292_800_000;
/// Clock sequence and node of `minTimeuuid`: the smallest under Cassandra's signed-byte order.
const MIN_CLOCK_SEQ_AND_NODE: u64 = 0x8080_8080_8080_8080;
/// Clock sequence and node of `maxTimeuuid`.
const MAX_CLOCK_SEQ_AND_NODE: u64 = 0x7f7f_7f7f_7f7f_7f7f;
const MILLIS_PER_DAY: i64 = 86_400_000;
const NANOS_PER_DAY: u128 = 86_400_000_000_000;

/// The 60-bit timestamp field of a version-1 UUID (`UUID.timestamp()`).
fn uuid_ticks(u: &Uuid) -> i64 {
    let msb = u64::from_be_bytes(u.as_bytes()[..8].try_into().unwrap_or([0; 8]));
    (((msb & 0x0FFF) << 48) | (((msb >> 16) & 0xFFFF) << 32) | (msb >> 32)) as i64
}

/// Unix milliseconds of a timeuuid (`UUIDGen.unixTimestamp`).
pub(super) fn timeuuid_to_millis(u: &Uuid) -> i64 {
    uuid_ticks(u) / 10_000 + START_EPOCH
}

/// A `date` (epoch at 2^31) from Unix milliseconds (`SimpleDateSerializer.timeInMillisToDay`).
pub(super) fn millis_to_date(ms: i64) -> u32 {
    let days = ms.div_euclid(1000) / 86_400;
    // Java's (int) cast keeps the low 32 bits.
    days.wrapping_add(1i64 << 31) as u32
}

/// Unix milliseconds at the start of a `date` (`SimpleDateSerializer.dayToTimeInMillis`).
pub(super) fn date_to_millis(d: u32) -> i64 {
    (i64::from(d) - (1i64 << 31)) * MILLIS_PER_DAY
}

/// `UUIDGen.createTime`: the most significant half of a version-1 UUID from its ticks.
fn time_msb(ticks: i64) -> u64 {
    let t = ticks as u64;
    ((t & 0xFFFF_FFFF) << 32) | ((t & 0x0000_FFFF_0000_0000) >> 16) | (t >> 48) | 0x1000
}

fn uuid_of(msb: u64, lsb: u64) -> Uuid {
    Uuid::from_u64_pair(msb, lsb)
}

/// `minTimeuuid(ms)`.
pub(super) fn min_timeuuid(ms: i64) -> Uuid {
    let ticks = ms.wrapping_sub(START_EPOCH).wrapping_mul(10_000);
    uuid_of(time_msb(ticks), MIN_CLOCK_SEQ_AND_NODE)
}

/// `maxTimeuuid(ms)`: the last tick of the millisecond.
pub(super) fn max_timeuuid(ms: i64) -> Uuid {
    let ticks = ms
        .wrapping_add(1)
        .wrapping_sub(START_EPOCH)
        .wrapping_mul(10_000)
        .wrapping_sub(1);
    uuid_of(time_msb(ticks), MAX_CLOCK_SEQ_AND_NODE)
}

fn since_epoch() -> std::time::Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

static LAST_TICKS: AtomicU64 = AtomicU64::new(0);

/// 100 ns ticks since the UUID epoch, strictly increasing across calls, so every `now()` is
/// distinct (as `UUIDGen.getTimeUUID`).
fn next_ticks() -> u64 {
    let now = (since_epoch().as_nanos() / 100) as u64 + (-START_EPOCH as u64) * 10_000;
    let mut last = LAST_TICKS.load(Ordering::Relaxed);
    loop {
        let next = now.max(last + 1);
        match LAST_TICKS.compare_exchange_weak(last, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return next,
            Err(seen) => last = seen,
        }
    }
}

/// This node's clock sequence and node id: random, with the RFC 4122 variant and the
/// multicast bit that marks a node id not taken from a MAC address.
fn clock_seq_and_node() -> u64 {
    static VALUE: OnceLock<u64> = OnceLock::new();
    *VALUE.get_or_init(|| {
        let (_, random) = Uuid::new_v4().as_u64_pair();
        (random & 0x3FFF_FFFF_FFFF_FFFF | 0x8000_0000_0000_0000) | 0x0000_0100_0000_0000
    })
}

/// A new version-1 UUID for the current time (`now()`).
pub fn new_timeuuid() -> Uuid {
    uuid_of(time_msb(next_ticks() as i64), clock_seq_and_node())
}

/// Milliseconds of a temporal value (`TemporalType.toTimeInMillis`), None for the empty value.
fn millis_of(v: &Value) -> Option<i64> {
    match v {
        Value::Timeuuid(u) => Some(timeuuid_to_millis(u)),
        Value::Timestamp(ms) | Value::Bigint(ms) => Some(*ms),
        Value::Date(d) => Some(date_to_millis(*d)),
        _ => None,
    }
}

/// Evaluates the scalar function `name` (as the parser gives it) on `args`, whose types are
/// `arg_types` (a column's or nested call's type; for a bind marker or literal, the type
/// [`super::scalar_arg_types`] gave it). `None` is null.
///
/// # Errors
/// The resolver's errors (unknown function, arity, types), and for `blobAsX` Cassandra's
/// `In call to function system.blobasint, value 0x000000 is not a valid binary representation
/// for type int`.
pub fn call_scalar(
    name: &str,
    args: &[Option<Value>],
    arg_types: &[DataType],
) -> Result<Option<Value>, QueryError> {
    let call: Vec<FunctionArg<'_>> = arg_types
        .iter()
        .map(|t| FunctionArg {
            kind: ArgKind::Typed(t),
            text: t.to_string(),
        })
        .collect();
    let sig = resolve(name, &call)?;
    if sig.is_aggregate {
        return Err(QueryError::invalid(format!(
            "Aggregate function {} cannot be evaluated on a single value",
            sig.qualified_name()
        )));
    }
    if super::vector::is_similarity(&sig.name) {
        let arg = |i: usize| args.get(i).and_then(Option::as_ref);
        return super::vector::call(&sig.name, arg(0), arg(1));
    }
    if super::format::is_format_function(&sig.name) {
        return super::format::call(&sig.name, args);
    }
    if super::mask::is_mask_function(&sig.name) {
        return super::mask::call(&sig, args);
    }
    if let (true, Some(ty)) = (
        super::collection::is_collection_function(&sig.name),
        sig.arg_types.first(),
    ) {
        let arg = args.first().and_then(Option::as_ref);
        return super::collection::call(&sig.name, arg, ty);
    }
    let arg = args.first().cloned().flatten();
    let now = since_epoch();
    let now_millis = now.as_millis() as i64;
    Ok(Some(match sig.name.as_str() {
        "now" | "currenttimeuuid" => Value::Timeuuid(new_timeuuid()),
        "currenttimestamp" => Value::Timestamp(now_millis),
        "currentdate" => Value::Date(millis_to_date(now_millis)),
        "currenttime" => Value::Time((now.as_nanos() % NANOS_PER_DAY) as i64),
        "uuid" => Value::Uuid(Uuid::new_v4()),
        "mintimeuuid" | "maxtimeuuid" => {
            let Some(ms) = arg.as_ref().and_then(millis_of) else {
                return Ok(None);
            };
            Value::Timeuuid(if sig.name == "mintimeuuid" {
                min_timeuuid(ms)
            } else {
                max_timeuuid(ms)
            })
        }
        "todate" | "totimestamp" | "tounixtimestamp" | "dateof" | "unixtimestampof" => {
            let Some(ms) = arg.as_ref().and_then(millis_of) else {
                return Ok(None);
            };
            match sig.name.as_str() {
                "todate" => Value::Date(millis_to_date(ms)),
                "totimestamp" | "dateof" => Value::Timestamp(ms),
                _ => Value::Bigint(ms),
            }
        }
        math if super::math::MATH_FUNCTIONS.contains(&math) => {
            let Some(v) = arg else {
                return Ok(None);
            };
            return Ok(super::math::call(math, &v));
        }
        other => {
            let Some(v) = arg else {
                return Ok(None);
            };
            if other.ends_with("asblob") {
                Value::Blob(v.to_bytes())
            } else {
                let bytes = match v {
                    Value::Blob(b) => b,
                    v => v.to_bytes(),
                };
                return Value::decode(&sig.return_type, &bytes)
                    .map(Some)
                    .map_err(|_| {
                        QueryError::invalid(format!(
                            "In call to function {}, value 0x{} is not a valid binary representation for type {}",
                            sig.qualified_name(),
                            hex(&bytes),
                            sig.return_type
                        ))
                    });
            }
        }
    }))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::time::{parse_date, parse_timestamp};
    use cql::types::NativeType;
    use NativeType as N;

    fn ty(t: NativeType) -> DataType {
        DataType::Native(t)
    }

    fn call1(name: &str, v: Value, t: NativeType) -> Result<Option<Value>, QueryError> {
        call_scalar(name, &[Some(v)], &[ty(t)])
    }

    #[test]
    fn min_and_max_timeuuid_have_cassandras_bytes() {
        // 2013-01-01 00:00:00 UTC.
        let ms = 1_356_998_400_000;
        // Ticks since 1582-10-15: (ms + 12219292800000) * 10000 = 0x1E253A62F6EC000.
        let min = call1("mintimeuuid", Value::Timestamp(ms), N::Timestamp).ok();
        assert_eq!(
            min,
            Some(Some(Value::Timeuuid(
                Uuid::parse_str("2f6ec000-53a6-11e2-8080-808080808080").unwrap()
            )))
        );
        let max = call1("maxtimeuuid", Value::Timestamp(ms), N::Timestamp).ok();
        assert_eq!(
            max,
            Some(Some(Value::Timeuuid(
                Uuid::parse_str("2f6ee70f-53a6-11e2-7f7f-7f7f7f7f7f7f").unwrap()
            )))
        );
        let back = call1(
            "tounixtimestamp",
            Value::Timeuuid(max_timeuuid(ms)),
            N::Timeuuid,
        )
        .ok();
        assert_eq!(back, Some(Some(Value::Bigint(ms))));
    }

    #[test]
    fn now_is_a_fresh_version_one_uuid_of_today() {
        let Ok(Some(Value::Timeuuid(a))) = call_scalar("now", &[], &[]) else {
            panic!("timeuuid expected");
        };
        let Ok(Some(Value::Timeuuid(b))) = call_scalar("currenttimeuuid", &[], &[]) else {
            panic!("timeuuid expected");
        };
        assert_ne!(a, b);
        assert_eq!(a.get_version_num(), 1);
        assert!(uuid_ticks(&b) > uuid_ticks(&a));
        // toDate(toTimestamp(now())) is today.
        let ts = call1("totimestamp", Value::Timeuuid(a), N::Timeuuid)
            .ok()
            .flatten()
            .unwrap();
        let date = call1("todate", ts, N::Timestamp).ok().flatten();
        let today = (SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs()
            / 86_400) as i64;
        assert_eq!(date, Some(Value::Date((today + (1 << 31)) as u32)));
        assert_eq!(call_scalar("currentdate", &[], &[]).ok().flatten(), date);
        let Ok(Some(Value::Uuid(u))) = call_scalar("uuid", &[], &[]) else {
            panic!("uuid expected");
        };
        assert_eq!(u.get_version_num(), 4);
        let Ok(Some(Value::Time(t))) = call_scalar("currenttime", &[], &[]) else {
            panic!("time expected");
        };
        assert!((0..NANOS_PER_DAY as i64).contains(&t));
    }

    #[test]
    fn dates_and_timestamps_convert_as_cassandra() {
        let day = parse_date("2015-05-21").unwrap();
        let ms = parse_timestamp("2015-05-21 11:03:02+0000").unwrap();
        assert_eq!(
            call1("todate", Value::Timestamp(ms), N::Timestamp).ok(),
            Some(Some(Value::Date(day)))
        );
        assert_eq!(
            call1("totimestamp", Value::Date(day), N::Date).ok(),
            Some(Some(Value::Timestamp(1_432_166_400_000)))
        );
        assert_eq!(
            call1("tounixtimestamp", Value::Date(day), N::Date).ok(),
            Some(Some(Value::Bigint(1_432_166_400_000)))
        );
        assert_eq!(
            call1("tounixtimestamp", Value::Timestamp(ms), N::Timestamp).ok(),
            Some(Some(Value::Bigint(ms)))
        );
        // Before the epoch Java rounds whole seconds down, then days toward zero.
        assert_eq!(millis_to_date(-1), 1 << 31);
        assert_eq!(millis_to_date(-86_400_000), (1 << 31) - 1);
        assert_eq!(millis_to_date(-86_399_001), (1 << 31) - 1);
        let u = min_timeuuid(ms);
        assert_eq!(
            call1("dateof", Value::Timeuuid(u), N::Timeuuid).ok(),
            Some(Some(Value::Timestamp(ms)))
        );
        assert_eq!(
            call1("unixtimestampof", Value::Timeuuid(u), N::Timeuuid).ok(),
            Some(Some(Value::Bigint(ms)))
        );
        assert_eq!(
            call_scalar("todate", &[None], &[ty(N::Timestamp)]).ok(),
            Some(None)
        );
        assert_eq!(call1("todate", Value::Empty, N::Timestamp).ok(), Some(None));
    }

    #[test]
    fn blob_conversions_round_trip_and_validate() {
        assert_eq!(
            call1("intasblob", Value::Int(1), N::Int).ok(),
            Some(Some(Value::Blob(vec![0, 0, 0, 1])))
        );
        assert_eq!(
            call1("varcharasblob", Value::Text("é".into()), N::Text).ok(),
            Some(Some(Value::Blob("é".as_bytes().to_vec())))
        );
        assert_eq!(
            call1("blobasint", Value::Blob(vec![0, 0, 1, 0]), N::Blob).ok(),
            Some(Some(Value::Int(256)))
        );
        assert_eq!(
            call1("blobastext", Value::Blob(b"hi".to_vec()), N::Blob).ok(),
            Some(Some(Value::Text("hi".into())))
        );
        let e = call1("blobasint", Value::Blob(vec![0, 0, 0]), N::Blob)
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("In call to function system.blobasint, value 0x000000 is not a valid binary representation for type int")
        );
        // The empty blob is the empty int, but no smallint.
        assert_eq!(
            call1("blobasint", Value::Blob(vec![]), N::Blob).ok(),
            Some(Some(Value::Empty))
        );
        assert!(call1("blobassmallint", Value::Blob(vec![]), N::Blob).is_err());
        assert!(call1("blobasvarchar", Value::Blob(vec![0xff]), N::Blob).is_err());
        assert_eq!(
            call_scalar("blobasbigint", &[None], &[ty(N::Blob)]).ok(),
            Some(None)
        );
    }
}
