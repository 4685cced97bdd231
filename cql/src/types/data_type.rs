//! `DataType`: every CQL type, its canonical CQL spelling and its native-protocol option id.

use std::fmt;

/// A CQL native (non-parameterised) type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NativeType {
    /// `ascii`: US-ASCII text.
    Ascii,
    /// `bigint`: 64-bit signed integer.
    Bigint,
    /// `blob`: arbitrary bytes.
    Blob,
    /// `boolean`.
    Boolean,
    /// `counter`: 64-bit distributed counter.
    Counter,
    /// `date`: days since -5877641-06-23 (u32, epoch at 2^31).
    Date,
    /// `decimal`: scale + varint unscaled value.
    Decimal,
    /// `double`: IEEE-754 binary64.
    Double,
    /// `duration`: months, days, nanoseconds.
    Duration,
    /// `float`: IEEE-754 binary32.
    Float,
    /// `inet`: IPv4 or IPv6 address.
    Inet,
    /// `int`: 32-bit signed integer.
    Int,
    /// `smallint`: 16-bit signed integer.
    Smallint,
    /// `text` (also spelled `varchar`): UTF-8 text.
    Text,
    /// `time`: nanoseconds since midnight.
    Time,
    /// `timestamp`: milliseconds since the Unix epoch.
    Timestamp,
    /// `timeuuid`: version-1 UUID.
    Timeuuid,
    /// `tinyint`: 8-bit signed integer.
    Tinyint,
    /// `uuid`: any UUID.
    Uuid,
    /// `varint`: arbitrary-precision integer.
    Varint,
}

impl NativeType {
    /// Every native type, in the order of their CQL names.
    pub const ALL: [NativeType; 20] = [
        NativeType::Ascii,
        NativeType::Bigint,
        NativeType::Blob,
        NativeType::Boolean,
        NativeType::Counter,
        NativeType::Date,
        NativeType::Decimal,
        NativeType::Double,
        NativeType::Duration,
        NativeType::Float,
        NativeType::Inet,
        NativeType::Int,
        NativeType::Smallint,
        NativeType::Text,
        NativeType::Time,
        NativeType::Timestamp,
        NativeType::Timeuuid,
        NativeType::Tinyint,
        NativeType::Uuid,
        NativeType::Varint,
    ];

    /// The canonical CQL name (`text`, never `varchar`).
    pub fn name(self) -> &'static str {
        match self {
            NativeType::Ascii => "ascii",
            NativeType::Bigint => "bigint",
            NativeType::Blob => "blob",
            NativeType::Boolean => "boolean",
            NativeType::Counter => "counter",
            NativeType::Date => "date",
            NativeType::Decimal => "decimal",
            NativeType::Double => "double",
            NativeType::Duration => "duration",
            NativeType::Float => "float",
            NativeType::Inet => "inet",
            NativeType::Int => "int",
            NativeType::Smallint => "smallint",
            NativeType::Text => "text",
            NativeType::Time => "time",
            NativeType::Timestamp => "timestamp",
            NativeType::Timeuuid => "timeuuid",
            NativeType::Tinyint => "tinyint",
            NativeType::Uuid => "uuid",
            NativeType::Varint => "varint",
        }
    }

    /// Looks a native type up by its CQL name, case-insensitively (`varchar` is `text`).
    pub fn from_name(name: &str) -> Option<NativeType> {
        let lower = name.to_ascii_lowercase();
        if lower == "varchar" {
            return Some(NativeType::Text);
        }
        NativeType::ALL.into_iter().find(|t| t.name() == lower)
    }

    /// The native-protocol v4 option id (§6 of the spec). Duration has none in v4
    /// (it is sent as a Custom type), so this returns `None` for it.
    pub fn option_id(self) -> Option<u16> {
        Some(match self {
            NativeType::Ascii => 0x0001,
            NativeType::Bigint => 0x0002,
            NativeType::Blob => 0x0003,
            NativeType::Boolean => 0x0004,
            NativeType::Counter => 0x0005,
            NativeType::Decimal => 0x0006,
            NativeType::Double => 0x0007,
            NativeType::Float => 0x0008,
            NativeType::Int => 0x0009,
            NativeType::Timestamp => 0x000B,
            NativeType::Uuid => 0x000C,
            NativeType::Text => 0x000D,
            NativeType::Varint => 0x000E,
            NativeType::Timeuuid => 0x000F,
            NativeType::Inet => 0x0010,
            NativeType::Date => 0x0011,
            NativeType::Time => 0x0012,
            NativeType::Smallint => 0x0013,
            NativeType::Tinyint => 0x0014,
            NativeType::Duration => return None,
        })
    }
}

/// A user-defined type: its keyspace, name and fields in definition order.
///
/// Straight out of the parser a UDT reference carries no fields (`fields` is empty and
/// `resolved` is false); the server's catalog fills them in.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UserType {
    /// Keyspace that owns the type (`None` when the reference was unqualified).
    pub keyspace: Option<String>,
    /// Type name.
    pub name: String,
    /// Field names and types, in definition order.
    pub fields: Vec<(String, DataType)>,
}

/// Any CQL type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum DataType {
    /// A native type.
    Native(NativeType),
    /// `list<T>`.
    List(Box<DataType>),
    /// `set<T>`.
    Set(Box<DataType>),
    /// `map<K, V>`.
    Map(Box<DataType>, Box<DataType>),
    /// `tuple<T1, T2, ...>` (always frozen in Cassandra).
    Tuple(Vec<DataType>),
    /// A user-defined type.
    Udt(Box<UserType>),
    /// `frozen<T>`: the value is one cell, compared as a whole.
    Frozen(Box<DataType>),
    /// A custom type given by its Java class name (`'org.apache...'`).
    Custom(String),
    /// `vector<T, n>` (Cassandra 5.0): exactly `n` non-null elements, one frozen cell.
    Vector(Box<DataType>, u32),
}

impl DataType {
    /// The type with any outer `frozen<>` removed.
    pub fn unfrozen(&self) -> &DataType {
        match self {
            DataType::Frozen(inner) => inner.unfrozen(),
            other => other,
        }
    }

    /// True for `frozen<...>`, tuples and vectors (which are always frozen).
    pub fn is_frozen(&self) -> bool {
        matches!(
            self,
            DataType::Frozen(_) | DataType::Tuple(_) | DataType::Vector(..)
        )
    }

    /// The serialized width of a value of this type when every value has the same one
    /// (Cassandra's `valueLengthIfFixed`), as a vector lays its elements out without lengths.
    pub fn fixed_width(&self) -> Option<usize> {
        match self {
            DataType::Native(t) => match t {
                NativeType::Boolean | NativeType::Tinyint => Some(1),
                NativeType::Smallint => Some(2),
                NativeType::Int | NativeType::Float | NativeType::Date => Some(4),
                NativeType::Bigint
                | NativeType::Double
                | NativeType::Timestamp
                | NativeType::Time
                | NativeType::Counter => Some(8),
                NativeType::Uuid | NativeType::Timeuuid => Some(16),
                _ => None,
            },
            DataType::Frozen(inner) => inner.fixed_width(),
            DataType::Vector(e, n) => e
                .fixed_width()
                .and_then(|w| w.checked_mul(usize::try_from(*n).ok()?)),
            _ => None,
        }
    }

    /// True for a non-frozen list, set, map or UDT (stored one cell per element).
    pub fn is_multi_cell(&self) -> bool {
        matches!(
            self,
            DataType::List(_) | DataType::Set(_) | DataType::Map(_, _) | DataType::Udt(_)
        )
    }

    /// True for `counter`.
    pub fn is_counter(&self) -> bool {
        matches!(self, DataType::Native(NativeType::Counter))
    }

    /// True when a `duration` appears anywhere in the type (Cassandra's `referencesDuration`):
    /// such values have no order, so slices on them are refused.
    pub fn references_duration(&self) -> bool {
        match self {
            DataType::Native(NativeType::Duration) => true,
            DataType::List(e) | DataType::Set(e) | DataType::Frozen(e) | DataType::Vector(e, _) => {
                e.references_duration()
            }
            DataType::Map(k, v) => k.references_duration() || v.references_duration(),
            DataType::Tuple(ts) => ts.iter().any(DataType::references_duration),
            DataType::Udt(u) => u.fields.iter().any(|(_, t)| t.references_duration()),
            _ => false,
        }
    }

    /// True for a (possibly frozen) list, set or map.
    pub fn is_collection(&self) -> bool {
        matches!(
            self.unfrozen(),
            DataType::List(_) | DataType::Set(_) | DataType::Map(_, _)
        )
    }

    /// Shorthand for `DataType::Native(NativeType::Text)`.
    pub const TEXT: DataType = DataType::Native(NativeType::Text);
}

impl From<NativeType> for DataType {
    fn from(t: NativeType) -> Self {
        DataType::Native(t)
    }
}

impl fmt::Display for NativeType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Writes a CQL identifier, double-quoting it unless it is lower-case alphanumeric/underscore
/// starting with a letter (Cassandra's `ColumnIdentifier.maybeQuote`, minus reserved words).
pub fn write_identifier(f: &mut impl fmt::Write, name: &str) -> fmt::Result {
    if is_unquoted_identifier(name) {
        f.write_str(name)
    } else {
        f.write_char('"')?;
        for c in name.chars() {
            if c == '"' {
                f.write_str("\"\"")?;
            } else {
                f.write_char(c)?;
            }
        }
        f.write_char('"')
    }
}

/// True when `name` may be written without double quotes.
pub fn is_unquoted_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    match chars.next() {
        Some(c) if c.is_ascii_lowercase() => {}
        _ => return false,
    }
    chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !crate::types::RESERVED_KEYWORDS.contains(&name)
}

/// The canonical CQL spelling, as `system_schema.columns.type` shows it: `text`, `frozen<list<int>>`,
/// UDTs by bare name, tuples as `frozen<tuple<...>>` inside other types as Cassandra prints them.
impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DataType::Native(t) => f.write_str(t.name()),
            DataType::List(t) => write!(f, "list<{t}>"),
            DataType::Set(t) => write!(f, "set<{t}>"),
            DataType::Map(k, v) => write!(f, "map<{k}, {v}>"),
            DataType::Tuple(ts) => {
                f.write_str("frozen<tuple<")?;
                for (i, t) in ts.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{t}")?;
                }
                f.write_str(">>")
            }
            DataType::Udt(u) => write_identifier(f, &u.name),
            DataType::Frozen(inner) => match inner.as_ref() {
                // A tuple already prints as frozen<tuple<..>>.
                DataType::Tuple(_) | DataType::Frozen(_) => write!(f, "{inner}"),
                other => write!(f, "frozen<{other}>"),
            },
            DataType::Custom(class) => write!(f, "'{}'", class.replace('\'', "''")),
            DataType::Vector(e, n) => write!(f, "vector<{e}, {n}>"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_matches_system_schema_spelling() {
        let t = DataType::Frozen(Box::new(DataType::Map(
            Box::new(NativeType::Text.into()),
            Box::new(DataType::List(Box::new(NativeType::Int.into()))),
        )));
        assert_eq!(t.to_string(), "frozen<map<text, list<int>>>");
        let tup = DataType::Tuple(vec![NativeType::Int.into(), NativeType::Text.into()]);
        assert_eq!(tup.to_string(), "frozen<tuple<int, text>>");
        assert_eq!(NativeType::from_name("VARCHAR"), Some(NativeType::Text));
        let v = DataType::Vector(Box::new(NativeType::Float.into()), 3);
        assert_eq!(v.to_string(), "vector<float, 3>");
        assert_eq!(v.fixed_width(), Some(12));
        assert!(!v.is_multi_cell());
        let t = DataType::Vector(Box::new(DataType::TEXT), 2);
        assert_eq!(t.to_string(), "vector<text, 2>");
        assert_eq!(t.fixed_width(), None);
    }

    #[test]
    fn identifiers_are_quoted_only_when_needed() {
        let mut s = String::new();
        write_identifier(&mut s, "MyCol").unwrap();
        write_identifier(&mut s, "ok_1").unwrap();
        write_identifier(&mut s, "select").unwrap();
        assert_eq!(s, "\"MyCol\"ok_1\"select\"");
    }
}
