//! The native aggregates `count`, `min`, `max`, `sum` and `avg`, as Cassandra 4.0's
//! `AggregateFcts` computes them.
//!
//! - `count(col)` counts non-null values (the empty value counts); `count(*)` is the caller's.
//! - `min`/`max` use the type's comparator and are null over no values.
//! - `sum` has the argument's type: tinyint, smallint, int, bigint and counter wrap around on
//!   overflow (Java `+=` on the primitive); float and double use Kahan summation in double;
//!   decimal and varint are exact. The sum of no values is 0.
//! - `avg` has the argument's type too: integers sum in a `long` that falls back to a big
//!   integer on overflow, divide truncating toward zero, then narrow (keeping the low bits);
//!   float and double use Kahan summation falling back to `BigDecimal` on overflow; decimal
//!   keeps a running mean `avg += (x - avg) / n` rounded half-even at the scale of `x - avg`;
//!   varint divides exactly, truncating. The average of no values is 0.
//!
//! Numeric aggregates skip the empty value (Cassandra fails on it with an internal error).
//! Values whose type only reads as the chosen overload's (`min` of a collection resolves to
//! `min(blob)`) are reinterpreted from their bytes, as Cassandra's functions see only bytes.

use super::conversions::{decimal_of_double, low_i64, Decimal, JavaNumber};
use super::{resolve, ArgKind, FunctionArg};
use crate::error::QueryError;
use crate::executor::order::compare_values;
use cql::types::{DataType, NativeType, Value};
use num_bigint::BigInt;
use std::cmp::Ordering;

use NativeType as N;

/// Kahan summation in double, as `FloatSumAggregate`.
#[derive(Debug, Clone, Default)]
struct Kahan {
    sum: f64,
    compensation: f64,
    simple_sum: f64,
}

impl Kahan {
    fn add(&mut self, x: f64) {
        self.simple_sum += x;
        let tmp = x - self.compensation;
        let rounded = self.sum + tmp;
        self.compensation = (rounded - self.sum) - tmp;
        self.sum = rounded;
    }

    /// The final sum; infinities of one sign that made NaN give the plain sum back.
    fn total(&self) -> f64 {
        let tmp = self.sum + self.compensation;
        if tmp.is_nan() && self.simple_sum.is_infinite() {
            self.simple_sum
        } else {
            tmp
        }
    }
}

/// `FloatAvgAggregate`: Kahan summation, switching to decimal once the sum overflows.
#[derive(Debug, Clone, Default)]
struct FloatAvg {
    kahan: Kahan,
    count: i64,
    big_sum: Option<Decimal>,
}

impl FloatAvg {
    fn add(&mut self, x: f64) -> Result<(), QueryError> {
        self.count += 1;
        if let Some(big) = &self.big_sum {
            self.big_sum = Some(big.add(&decimal_of_double(x)?));
            return Ok(());
        }
        let prev = self.kahan.sum;
        self.kahan.add(x);
        if self.kahan.sum.is_infinite() && !x.is_infinite() {
            self.big_sum = Some(decimal_of_double(prev)?.add(&decimal_of_double(x)?));
        }
        Ok(())
    }

    fn mean(&self) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        match &self.big_sum {
            Some(big) => big.div_half_even(self.count).to_f64(),
            None => self.kahan.total() / self.count as f64,
        }
    }
}

/// `AvgAggregate`: a `long` sum that falls back to a big integer on overflow.
#[derive(Debug, Clone, Default)]
struct LongAvg {
    sum: i64,
    count: i64,
    big_sum: Option<BigInt>,
}

impl LongAvg {
    fn add(&mut self, n: i64) {
        self.count += 1;
        if let Some(big) = &mut self.big_sum {
            *big += n;
            return;
        }
        let prev = self.sum;
        self.sum = prev.wrapping_add(n);
        if ((prev ^ self.sum) & (n ^ self.sum)) < 0 {
            self.big_sum = Some(BigInt::from(prev) + n);
        }
    }

    fn mean(&self) -> i64 {
        match &self.big_sum {
            Some(big) => low_i64(&(big / self.count)),
            None if self.count == 0 => 0,
            None => self.sum / self.count,
        }
    }
}

#[derive(Debug, Clone)]
enum State {
    Count(i64),
    Min(Option<Value>),
    Max(Option<Value>),
    /// tinyint, smallint, int, bigint, counter: a wrapping sum narrowed at the end.
    SumInteger(i64),
    SumFloating(Kahan),
    SumDecimal(Decimal),
    SumVarint(BigInt),
    AvgInteger(LongAvg),
    AvgFloating(FloatAvg),
    AvgDecimal {
        avg: Decimal,
        count: i64,
    },
    AvgVarint {
        sum: BigInt,
        count: i64,
    },
}

/// A running aggregate over the values of one selector.
#[derive(Debug, Clone)]
pub struct Aggregator {
    /// The argument type of the chosen overload; it is also the result type except for count.
    arg_type: DataType,
    /// The type of the values [`Aggregator::add`] receives.
    input_type: DataType,
    state: State,
}

/// The integer a value holds as Java's `Number.longValue()`.
fn long_of(v: &Value) -> Option<i64> {
    JavaNumber::of(v).map(|n| n.long_value())
}

/// The float a value holds as Java's `Number.doubleValue()`.
fn double_of(v: &Value) -> Option<f64> {
    JavaNumber::of(v).map(|n| n.double_value())
}

fn varint_of(v: &Value) -> Option<BigInt> {
    match v {
        Value::Varint(b) => Some(BigInt::from_signed_bytes_be(b)),
        _ => None,
    }
}

/// A value of `ty` holding the integer `n`, narrowed as Java's casts narrow.
fn integer_value(ty: &DataType, n: i64) -> Value {
    match ty.unfrozen() {
        DataType::Native(N::Tinyint) => Value::Tinyint(n as i8),
        DataType::Native(N::Smallint) => Value::Smallint(n as i16),
        DataType::Native(N::Int) => Value::Int(n as i32),
        DataType::Native(N::Counter) => Value::Counter(n),
        _ => Value::Bigint(n),
    }
}

fn floating_value(ty: &DataType, x: f64) -> Value {
    if *ty.unfrozen() == DataType::Native(N::Float) {
        Value::Float(x as f32)
    } else {
        Value::Double(x)
    }
}

impl Aggregator {
    /// Starts the aggregate `name` (`count`, `min`, `max`, `sum`, `avg`) over values of type
    /// `arg_type`.
    ///
    /// # Errors
    /// As [`super::aggregate_return_type`]: an unknown aggregate, or no overload for the type
    /// (`sum` of text).
    pub fn new(name: &str, arg_type: &DataType) -> Result<Self, QueryError> {
        let arg = FunctionArg {
            kind: ArgKind::Typed(arg_type),
            text: arg_type.to_string(),
        };
        let sig = resolve(name, std::slice::from_ref(&arg))?;
        let Some(resolved) = sig.arg_types.first().filter(|_| sig.is_aggregate) else {
            return Err(QueryError::invalid(format!("Unknown function '{name}'")));
        };
        let native = match resolved.unfrozen() {
            DataType::Native(n) => *n,
            _ => N::Blob,
        };
        let integer = matches!(
            native,
            N::Tinyint | N::Smallint | N::Int | N::Bigint | N::Counter
        );
        let state = match (sig.name.as_str(), native) {
            ("count", _) => State::Count(0),
            ("min", _) => State::Min(None),
            ("max", _) => State::Max(None),
            ("sum", N::Decimal) => State::SumDecimal(Decimal::zero()),
            ("sum", N::Varint) => State::SumVarint(BigInt::from(0)),
            ("sum", _) if integer => State::SumInteger(0),
            ("sum", _) => State::SumFloating(Kahan::default()),
            ("avg", N::Decimal) => State::AvgDecimal {
                avg: Decimal::zero(),
                count: 0,
            },
            ("avg", N::Varint) => State::AvgVarint {
                sum: BigInt::from(0),
                count: 0,
            },
            ("avg", _) if integer => State::AvgInteger(LongAvg::default()),
            _ => State::AvgFloating(FloatAvg::default()),
        };
        Ok(Aggregator {
            arg_type: resolved.clone(),
            input_type: arg_type.clone(),
            state,
        })
    }

    /// The result type: bigint for `count`, else the argument type.
    pub fn return_type(&self) -> DataType {
        match self.state {
            State::Count(_) => DataType::Native(N::Bigint),
            _ => self.arg_type.clone(),
        }
    }

    /// Adds one value (`None` is null, which only `count` notices by not counting it).
    ///
    /// # Errors
    /// A value that does not read as the overload's type, and a float average whose overflow
    /// meets NaN (Cassandra fails there too).
    pub fn add(&mut self, value: Option<&Value>) -> Result<(), QueryError> {
        let Some(value) = value else {
            return Ok(());
        };
        if let State::Count(n) = &mut self.state {
            *n += 1;
            return Ok(());
        }
        let owned;
        let value = if self.input_type.unfrozen() == self.arg_type.unfrozen() {
            value
        } else {
            owned = Value::decode(&self.arg_type, &value.to_bytes())
                .map_err(|e| QueryError::invalid(e.to_string()))?;
            &owned
        };
        let ty = &self.arg_type;
        match &mut self.state {
            State::Count(_) => {}
            State::Min(best) => {
                if best
                    .as_ref()
                    .is_none_or(|b| compare_values(b, value, ty) == Ordering::Greater)
                {
                    *best = Some(value.clone());
                }
            }
            State::Max(best) => {
                if best
                    .as_ref()
                    .is_none_or(|b| compare_values(b, value, ty) == Ordering::Less)
                {
                    *best = Some(value.clone());
                }
            }
            State::SumInteger(sum) => {
                if let Some(n) = long_of(value) {
                    *sum = sum.wrapping_add(n);
                }
            }
            State::SumFloating(k) => {
                if let Some(x) = double_of(value) {
                    k.add(x);
                }
            }
            State::SumDecimal(sum) => {
                if let Some(d) = Decimal::of(value) {
                    *sum = sum.add(&d);
                }
            }
            State::SumVarint(sum) => {
                if let Some(b) = varint_of(value) {
                    *sum += b;
                }
            }
            State::AvgInteger(avg) => {
                if let Some(n) = long_of(value) {
                    avg.add(n);
                }
            }
            State::AvgFloating(avg) => {
                if let Some(x) = double_of(value) {
                    avg.add(x)?;
                }
            }
            State::AvgDecimal { avg, count } => {
                if let Some(d) = Decimal::of(value) {
                    *count += 1;
                    *avg = avg.add(&d.sub(avg).div_half_even(*count));
                }
            }
            State::AvgVarint { sum, count } => {
                if let Some(b) = varint_of(value) {
                    *count += 1;
                    *sum += b;
                }
            }
        }
        Ok(())
    }

    /// The aggregate's value over everything added (None is null: `min`/`max` of no values).
    pub fn finish(&self) -> Option<Value> {
        let ty = &self.arg_type;
        Some(match &self.state {
            State::Count(n) => Value::Bigint(*n),
            State::Min(v) | State::Max(v) => return v.clone(),
            State::SumInteger(sum) => integer_value(ty, *sum),
            State::SumFloating(k) => floating_value(ty, k.total()),
            State::SumDecimal(sum) => sum.to_value(),
            State::SumVarint(sum) => Value::Varint(sum.to_signed_bytes_be()),
            State::AvgInteger(avg) => integer_value(ty, avg.mean()),
            State::AvgFloating(avg) => floating_value(ty, avg.mean()),
            State::AvgDecimal { avg, .. } => avg.to_value(),
            State::AvgVarint { sum, count } => {
                let mean = if *count == 0 {
                    BigInt::from(0)
                } else {
                    sum / *count
                };
                Value::Varint(mean.to_signed_bytes_be())
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::numeric::decimal_from_str;

    fn ty(t: NativeType) -> DataType {
        DataType::Native(t)
    }

    fn run(name: &str, t: NativeType, values: &[Option<Value>]) -> Option<Value> {
        let mut agg = Aggregator::new(name, &ty(t)).unwrap();
        for v in values {
            agg.add(v.as_ref()).unwrap();
        }
        agg.finish()
    }

    fn ints(values: &[i32]) -> Vec<Option<Value>> {
        values.iter().map(|v| Some(Value::Int(*v))).collect()
    }

    #[test]
    fn count_counts_non_null_values() {
        let values = vec![Some(Value::Int(1)), None, Some(Value::Empty)];
        assert_eq!(run("count", N::Int, &values), Some(Value::Bigint(2)));
        assert_eq!(run("count", N::Text, &[]), Some(Value::Bigint(0)));
    }

    #[test]
    fn min_and_max_use_the_type_order() {
        let values = ints(&[3, -7, 12]);
        assert_eq!(run("min", N::Int, &values), Some(Value::Int(-7)));
        assert_eq!(run("max", N::Int, &values), Some(Value::Int(12)));
        assert_eq!(run("min", N::Int, &[None]), None);
        let texts: Vec<_> = ["b", "a", "c"]
            .iter()
            .map(|s| Some(Value::Text(s.to_string())))
            .collect();
        assert_eq!(
            run("max", N::Text, &texts),
            Some(Value::Text("c".to_string()))
        );
        let counters = vec![Some(Value::Counter(5)), Some(Value::Counter(-2))];
        assert_eq!(run("min", N::Counter, &counters), Some(Value::Counter(-2)));
    }

    #[test]
    fn integer_sums_wrap_and_averages_do_not() {
        assert_eq!(run("sum", N::Int, &ints(&[1, 2, 3])), Some(Value::Int(6)));
        assert_eq!(
            run("sum", N::Int, &ints(&[i32::MAX, 1])),
            Some(Value::Int(i32::MIN))
        );
        assert_eq!(
            run("avg", N::Int, &ints(&[i32::MAX, i32::MAX])),
            Some(Value::Int(i32::MAX))
        );
        // Integer division truncates toward zero.
        assert_eq!(run("avg", N::Int, &ints(&[1, 2])), Some(Value::Int(1)));
        assert_eq!(run("avg", N::Int, &ints(&[-1, -2])), Some(Value::Int(-1)));
        let tiny = vec![Some(Value::Tinyint(100)), Some(Value::Tinyint(100))];
        assert_eq!(run("sum", N::Tinyint, &tiny), Some(Value::Tinyint(-56)));
        assert_eq!(run("avg", N::Tinyint, &tiny), Some(Value::Tinyint(100)));
        let longs = vec![Some(Value::Bigint(i64::MAX)), Some(Value::Bigint(i64::MAX))];
        assert_eq!(run("sum", N::Bigint, &longs), Some(Value::Bigint(-2)));
        assert_eq!(run("avg", N::Bigint, &longs), Some(Value::Bigint(i64::MAX)));
        let counters = vec![Some(Value::Counter(2)), Some(Value::Counter(3))];
        assert_eq!(run("sum", N::Counter, &counters), Some(Value::Counter(5)));
        assert_eq!(run("avg", N::Counter, &counters), Some(Value::Counter(2)));
    }

    #[test]
    fn empty_inputs_sum_and_average_to_zero() {
        assert_eq!(run("sum", N::Int, &[]), Some(Value::Int(0)));
        assert_eq!(run("avg", N::Smallint, &[None]), Some(Value::Smallint(0)));
        assert_eq!(run("avg", N::Double, &[]), Some(Value::Double(0.0)));
        assert_eq!(run("sum", N::Float, &[]), Some(Value::Float(0.0)));
        assert_eq!(
            run("sum", N::Decimal, &[]),
            Some(Value::Decimal {
                scale: 0,
                unscaled: vec![0]
            })
        );
        assert_eq!(run("avg", N::Varint, &[]), Some(Value::Varint(vec![0])));
    }

    #[test]
    fn floating_sums_are_compensated() {
        let values: Vec<_> = (0..10).map(|_| Some(Value::Double(0.1))).collect();
        assert_eq!(run("sum", N::Double, &values), Some(Value::Double(1.0)));
        assert_eq!(run("avg", N::Double, &values), Some(Value::Double(0.1)));
        let floats = vec![Some(Value::Float(1.5)), Some(Value::Float(2.0))];
        assert_eq!(run("avg", N::Float, &floats), Some(Value::Float(1.75)));
        // The average survives a sum that overflows double.
        let big = vec![Some(Value::Double(f64::MAX)), Some(Value::Double(f64::MAX))];
        assert_eq!(run("avg", N::Double, &big), Some(Value::Double(f64::MAX)));
        assert_eq!(
            run("sum", N::Double, &big),
            Some(Value::Double(f64::INFINITY))
        );
    }

    #[test]
    fn decimal_and_varint_are_exact() {
        let d = |s: &str| Some(decimal_from_str(s).unwrap());
        assert_eq!(run("sum", N::Decimal, &[d("1.5"), d("2.25")]), d("3.75"));
        // Running mean, half-even at the scale of (x - avg): 1 + (2 - 1) / 2 = 1 + 0.5, and
        // 0.5 rounds to 0 at scale 0.
        assert_eq!(run("avg", N::Decimal, &[d("1"), d("2")]), d("1"));
        assert_eq!(run("avg", N::Decimal, &[d("1.0"), d("2.0")]), d("1.5"));
        let v = |n: i64| Some(Value::Varint(BigInt::from(n).to_signed_bytes_be()));
        assert_eq!(run("sum", N::Varint, &[v(i64::MAX), v(1)]), {
            let n = BigInt::from(i64::MAX) + 1u8;
            Some(Value::Varint(n.to_signed_bytes_be()))
        });
        assert_eq!(run("avg", N::Varint, &[v(-3), v(0)]), v(-1));
    }

    #[test]
    fn unsupported_types_are_rejected() {
        assert!(Aggregator::new("sum", &ty(N::Text)).is_err());
        assert!(Aggregator::new("now", &ty(N::Int)).is_err());
        let list = DataType::List(Box::new(ty(N::Int)));
        let mut agg = Aggregator::new("max", &list).unwrap();
        assert_eq!(agg.return_type(), ty(N::Blob));
        agg.add(Some(&Value::List(vec![Value::Int(1)]))).unwrap();
        assert!(matches!(agg.finish(), Some(Value::Blob(_))));
    }
}
