//! CQL values to Lua values and back: integers to Lua integers, `float`/`double` to numbers,
//! text to strings, booleans, lists/sets/vectors/tuples to sequence tables, maps and UDTs to
//! tables, timestamps to milliseconds, blobs to byte strings, UUIDs to their text, null to nil.
//! Varints are integers (their decimal text past a Lua integer), decimals their exact text
//! (Lua's arithmetic reads it as a number), dates `'YYYY-MM-DD'` text, times nanoseconds of
//! the day, inets their address text, durations tables `{months, days, nanoseconds}`; each
//! comes back from the same form (a decimal or a varint also from a number).

use cql::types::{DataType, NativeType, Value};
use mlua::{Lua, Value as LuaValue};

/// A CQL value as a Lua value; `None` is nil.
///
/// # Errors
/// A message naming a type Lua functions cannot take.
pub fn to_lua(lua: &Lua, value: Option<&Value>) -> Result<LuaValue, String> {
    let Some(value) = value else {
        return Ok(LuaValue::Nil);
    };
    let err = |e: mlua::Error| e.to_string();
    Ok(match value {
        Value::Int(n) => LuaValue::Integer(i64::from(*n)),
        Value::Bigint(n) | Value::Counter(n) => LuaValue::Integer(*n),
        Value::Smallint(n) => LuaValue::Integer(i64::from(*n)),
        Value::Tinyint(n) => LuaValue::Integer(i64::from(*n)),
        Value::Double(x) => LuaValue::Number(*x),
        Value::Float(x) => LuaValue::Number(f64::from(*x)),
        Value::Boolean(b) => LuaValue::Boolean(*b),
        Value::Text(s) | Value::Ascii(s) => LuaValue::String(lua.create_string(s).map_err(err)?),
        Value::List(items) | Value::Set(items) | Value::Vector(items) => {
            let t = lua.create_table().map_err(err)?;
            for (i, item) in items.iter().enumerate() {
                t.raw_set(i + 1, to_lua(lua, Some(item))?).map_err(err)?;
            }
            LuaValue::Table(t)
        }
        Value::Map(entries) => {
            let t = lua.create_table().map_err(err)?;
            for (k, v) in entries {
                t.raw_set(to_lua(lua, Some(k))?, to_lua(lua, Some(v))?)
                    .map_err(err)?;
            }
            LuaValue::Table(t)
        }
        Value::Tuple(items) => {
            let t = lua.create_table().map_err(err)?;
            for (i, item) in items.iter().enumerate() {
                t.raw_set(i + 1, to_lua(lua, item.as_ref())?).map_err(err)?;
            }
            LuaValue::Table(t)
        }
        Value::Udt(fields) => {
            let t = lua.create_table().map_err(err)?;
            for (name, v) in fields {
                t.raw_set(name.as_str(), to_lua(lua, v.as_ref())?)
                    .map_err(err)?;
            }
            LuaValue::Table(t)
        }
        Value::Timestamp(ms) => LuaValue::Integer(*ms),
        Value::Blob(b) => LuaValue::String(lua.create_string(b).map_err(err)?),
        Value::Uuid(u) | Value::Timeuuid(u) => {
            LuaValue::String(lua.create_string(u.to_string()).map_err(err)?)
        }
        Value::Varint(b) => {
            let n = num_bigint::BigInt::from_signed_bytes_be(b);
            match i64::try_from(&n) {
                Ok(n) => LuaValue::Integer(n),
                Err(_) => LuaValue::String(lua.create_string(n.to_string()).map_err(err)?),
            }
        }
        Value::Decimal { .. } | Value::Inet(_) | Value::Date(_) => {
            let text = value.to_cql_literal();
            let text = text.trim_matches('\'');
            LuaValue::String(lua.create_string(text).map_err(err)?)
        }
        Value::Time(nanos) => LuaValue::Integer(*nanos),
        Value::Duration {
            months,
            days,
            nanos,
        } => {
            let t = lua.create_table().map_err(err)?;
            t.raw_set("months", *months).map_err(err)?;
            t.raw_set("days", *days).map_err(err)?;
            t.raw_set("nanoseconds", *nanos).map_err(err)?;
            LuaValue::Table(t)
        }
        other => {
            return Err(format!(
                "values like {other:?} cannot be passed to Lua functions"
            ))
        }
    })
}

/// A Lua result as a CQL value of type `ty`; nil is `None`.
///
/// # Errors
/// A message when the Lua value does not fit `ty`.
pub fn from_lua(value: LuaValue, ty: &DataType) -> Result<Option<Value>, String> {
    if matches!(value, LuaValue::Nil) {
        return Ok(None);
    }
    let mismatch = |v: &LuaValue| format!("cannot convert Lua {} to {ty}", v.type_name());
    let int = |v: &LuaValue| -> Result<i64, String> {
        match v {
            LuaValue::Integer(n) => Ok(*n),
            LuaValue::Number(x) if x.fract() == 0.0 && x.abs() < 9.2e18 => Ok(*x as i64),
            _ => Err(mismatch(v)),
        }
    };
    let fit = |n: i64| format!("value {n} is out of range for {ty}");
    let ty = match ty {
        DataType::Frozen(inner) => inner.as_ref(),
        t => t,
    };
    Ok(Some(match ty {
        DataType::Native(NativeType::Int) => {
            let n = int(&value)?;
            Value::Int(i32::try_from(n).map_err(|_| fit(n))?)
        }
        DataType::Native(NativeType::Bigint) => Value::Bigint(int(&value)?),
        DataType::Native(NativeType::Smallint) => {
            let n = int(&value)?;
            Value::Smallint(i16::try_from(n).map_err(|_| fit(n))?)
        }
        DataType::Native(NativeType::Tinyint) => {
            let n = int(&value)?;
            Value::Tinyint(i8::try_from(n).map_err(|_| fit(n))?)
        }
        DataType::Native(NativeType::Double) => match value {
            LuaValue::Integer(n) => Value::Double(n as f64),
            LuaValue::Number(x) => Value::Double(x),
            v => return Err(mismatch(&v)),
        },
        DataType::Native(NativeType::Float) => match value {
            LuaValue::Integer(n) => Value::Float(n as f32),
            LuaValue::Number(x) => Value::Float(x as f32),
            v => return Err(mismatch(&v)),
        },
        DataType::Native(NativeType::Boolean) => match value {
            LuaValue::Boolean(b) => Value::Boolean(b),
            v => return Err(mismatch(&v)),
        },
        DataType::Native(NativeType::Text | NativeType::Ascii) => {
            let s = match &value {
                LuaValue::String(s) => s.to_str().map_err(|e| e.to_string())?.to_string(),
                LuaValue::Integer(n) => n.to_string(),
                LuaValue::Number(x) => x.to_string(),
                v => return Err(mismatch(v)),
            };
            if matches!(ty, DataType::Native(NativeType::Ascii)) {
                Value::Ascii(s)
            } else {
                Value::Text(s)
            }
        }
        DataType::List(elem) | DataType::Set(elem) => {
            let LuaValue::Table(t) = value else {
                return Err(mismatch(&value));
            };
            let mut items = Vec::new();
            for item in t.sequence_values::<LuaValue>() {
                let item = item.map_err(|e| e.to_string())?;
                if let Some(v) = from_lua(item, elem)? {
                    items.push(v);
                }
            }
            if matches!(ty, DataType::Set(_)) {
                Value::Set(items)
            } else {
                Value::List(items)
            }
        }
        DataType::Map(kt, vt) => {
            let LuaValue::Table(t) = value else {
                return Err(mismatch(&value));
            };
            let mut entries = Vec::new();
            for pair in t.pairs::<LuaValue, LuaValue>() {
                let (k, v) = pair.map_err(|e| e.to_string())?;
                if let (Some(k), Some(v)) = (from_lua(k, kt)?, from_lua(v, vt)?) {
                    entries.push((k, v));
                }
            }
            Value::Map(entries)
        }
        DataType::Tuple(types) => {
            let LuaValue::Table(t) = value else {
                return Err(mismatch(&value));
            };
            let mut items = Vec::with_capacity(types.len());
            for (i, et) in types.iter().enumerate() {
                let item: LuaValue = t.raw_get(i + 1).map_err(|e| e.to_string())?;
                items.push(from_lua(item, et)?);
            }
            Value::Tuple(items)
        }
        DataType::Udt(u) => {
            let LuaValue::Table(t) = value else {
                return Err(mismatch(&value));
            };
            let mut fields = Vec::with_capacity(u.fields.len());
            for (name, ft) in &u.fields {
                let item: LuaValue = t.raw_get(name.as_str()).map_err(|e| e.to_string())?;
                fields.push((name.clone(), from_lua(item, ft)?));
            }
            Value::Udt(fields)
        }
        DataType::Native(NativeType::Timestamp) => Value::Timestamp(int(&value)?),
        DataType::Native(NativeType::Blob) => match &value {
            LuaValue::String(b) => Value::Blob(b.as_bytes().to_vec()),
            v => return Err(mismatch(v)),
        },
        DataType::Native(NativeType::Uuid | NativeType::Timeuuid) => {
            let LuaValue::String(text) = &value else {
                return Err(mismatch(&value));
            };
            let text = text.to_str().map_err(|e| e.to_string())?;
            let u = uuid::Uuid::parse_str(&text).map_err(|e| e.to_string())?;
            if matches!(ty, DataType::Native(NativeType::Uuid)) {
                Value::Uuid(u)
            } else {
                Value::Timeuuid(u)
            }
        }
        DataType::Native(
            NativeType::Varint
            | NativeType::Decimal
            | NativeType::Date
            | NativeType::Time
            | NativeType::Inet,
        ) => {
            let literal = match &value {
                LuaValue::Integer(n) => match ty {
                    DataType::Native(NativeType::Date) => {
                        return Ok(Some(Value::Date(u32::try_from(*n).map_err(|_| fit(*n))?)))
                    }
                    DataType::Native(NativeType::Time) => return Ok(Some(Value::Time(*n))),
                    _ => cql::ast::Literal::Integer(n.to_string()),
                },
                LuaValue::Number(x) if x.is_finite() => {
                    let text = format!("{x:?}");
                    if x.fract() == 0.0 && matches!(ty, DataType::Native(NativeType::Varint)) {
                        cql::ast::Literal::Integer(text.trim_end_matches(".0").to_string())
                    } else {
                        cql::ast::Literal::Float(text)
                    }
                }
                LuaValue::String(s) => {
                    let text = s.to_str().map_err(|e| e.to_string())?.to_string();
                    match ty {
                        DataType::Native(NativeType::Varint) => cql::ast::Literal::Integer(text),
                        DataType::Native(NativeType::Decimal) => cql::ast::Literal::Float(text),
                        _ => cql::ast::Literal::String(text),
                    }
                }
                v => return Err(mismatch(v)),
            };
            crate::executor::literal::literal_value(
                &cql::ast::Expr::Literal(literal),
                ty,
                "the result",
            )
            .map_err(|e| e.to_string())?
            .ok_or_else(|| mismatch(&value))?
        }
        DataType::Native(NativeType::Duration) => {
            let LuaValue::Table(t) = &value else {
                return Err(mismatch(&value));
            };
            let field = |name: &str| -> Result<i64, String> {
                let v: LuaValue = t.raw_get(name).map_err(|e| e.to_string())?;
                match v {
                    LuaValue::Nil => Ok(0),
                    v => int(&v),
                }
            };
            let small = |n: i64| i32::try_from(n).map_err(|_| fit(n));
            Value::Duration {
                months: small(field("months")?)?,
                days: small(field("days")?)?,
                nanos: field("nanoseconds")?,
            }
        }
        _ => return Err(format!("Lua functions cannot return {ty}")),
    }))
}
