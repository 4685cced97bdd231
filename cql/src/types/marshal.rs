//! Cassandra's marshal class names, as a custom type is written (`'CompositeType(UTF8Type,
//! Int32Type)'`): parsed the way Cassandra's `TypeParser` reads them, printed with full class
//! names as its `AbstractType.toString` does, mapped to CQL types where one exists
//! (`'Int32Type'` is `int`), and the string form of composite values (`'abc:123'`,
//! `'s@abc:i@123'`) encoded as `CompositeType` and `DynamicCompositeType` lay them out.

use super::data_type::{DataType, NativeType};
use std::fmt;

/// The package of Cassandra's own marshal classes.
pub const MARSHAL_PACKAGE: &str = "org.apache.cassandra.db.marshal.";

/// How deep class parameters may nest (a bound on the parser's recursion).
const MAX_DEPTH: usize = 32;

/// A parsed marshal class: its full name and its parameters (`alias=>` only in a
/// `DynamicCompositeType`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarshalType {
    /// The fully qualified class name.
    pub class: String,
    /// The parameters in order, each with its alias if it has one.
    pub params: Vec<(Option<String>, MarshalType)>,
}

impl MarshalType {
    /// Parses a class string such as `CompositeType(UTF8Type, Int32Type)`; short names are
    /// taken from Cassandra's marshal package.
    ///
    /// # Errors
    /// A description of what is malformed.
    pub fn parse(text: &str) -> Result<MarshalType, String> {
        let mut p = Parser { text, pos: 0 };
        let t = p.class(0)?;
        p.skip_blank();
        if p.pos != text.len() {
            return Err(format!("unexpected '{}' in type {text}", &text[p.pos..]));
        }
        Ok(t)
    }

    /// The class name without its package.
    pub fn short_name(&self) -> &str {
        self.class.rsplit('.').next().unwrap_or(&self.class)
    }

    fn is_marshal(&self, name: &str) -> bool {
        self.class.strip_prefix(MARSHAL_PACKAGE) == Some(name)
    }

    /// The CQL type this class stands for, when there is one (`None` for composites and
    /// classes CQL has no name for, which stay custom types).
    pub fn to_cql(&self) -> Option<DataType> {
        let name = self.class.strip_prefix(MARSHAL_PACKAGE)?;
        let one = |i: usize| self.params.get(i).and_then(|(_, t)| t.to_cql());
        let native = |n: NativeType| Some(DataType::Native(n));
        match name {
            "UTF8Type" => native(NativeType::Text),
            "AsciiType" => native(NativeType::Ascii),
            "Int32Type" => native(NativeType::Int),
            "LongType" => native(NativeType::Bigint),
            "BooleanType" => native(NativeType::Boolean),
            "BytesType" => native(NativeType::Blob),
            "DoubleType" => native(NativeType::Double),
            "FloatType" => native(NativeType::Float),
            "UUIDType" => native(NativeType::Uuid),
            "TimeUUIDType" => native(NativeType::Timeuuid),
            "TimestampType" | "DateType" => native(NativeType::Timestamp),
            "IntegerType" => native(NativeType::Varint),
            "DecimalType" => native(NativeType::Decimal),
            "InetAddressType" => native(NativeType::Inet),
            "ShortType" => native(NativeType::Smallint),
            "ByteType" => native(NativeType::Tinyint),
            "SimpleDateType" => native(NativeType::Date),
            "TimeType" => native(NativeType::Time),
            "CounterColumnType" => native(NativeType::Counter),
            "ListType" if self.params.len() == 1 => Some(DataType::List(Box::new(one(0)?))),
            "SetType" if self.params.len() == 1 => Some(DataType::Set(Box::new(one(0)?))),
            "MapType" if self.params.len() == 2 => {
                Some(DataType::Map(Box::new(one(0)?), Box::new(one(1)?)))
            }
            "FrozenType" if self.params.len() == 1 => Some(DataType::Frozen(Box::new(one(0)?))),
            "TupleType" if !self.params.is_empty() => Some(DataType::Tuple(
                (0..self.params.len())
                    .map(one)
                    .collect::<Option<Vec<_>>>()?,
            )),
            "VectorType" if self.params.len() == 2 => {
                let dimension = self.params[1].1.short_name().parse::<u32>().ok()?;
                (dimension > 0).then_some(DataType::Vector(Box::new(one(0)?), dimension))
            }
            _ => None,
        }
    }

    /// The class inside a `ReversedType`, or `None` when this is not one.
    pub fn reversed(&self) -> Option<&MarshalType> {
        match self.params.as_slice() {
            [(None, inner)] if self.is_marshal("ReversedType") => Some(inner),
            _ => None,
        }
    }

    /// Encodes a composite value from its string form (`CompositeType.fromString`:
    /// components split on unescaped `:`; `DynamicCompositeType` components are
    /// `alias@value` or `class@value`). `None` when this is not a composite type.
    ///
    /// # Errors
    /// A description of the component that does not parse.
    pub fn composite_from_string(&self, text: &str) -> Option<Result<Vec<u8>, String>> {
        let dynamic = if self.is_marshal("CompositeType") {
            false
        } else if self.is_marshal("DynamicCompositeType") {
            true
        } else {
            return None;
        };
        Some(self.encode_composite(text, dynamic))
    }

    fn encode_composite(&self, text: &str, dynamic: bool) -> Result<Vec<u8>, String> {
        let parts = split_components(text);
        if !dynamic && parts.len() > self.params.len() {
            return Err(format!(
                "too many components in '{text}': {} for {} types",
                parts.len(),
                self.params.len()
            ));
        }
        let mut out = Vec::new();
        for (i, part) in parts.iter().enumerate() {
            let (ty, value) = if dynamic {
                let (head, value) = part
                    .split_once('@')
                    .ok_or_else(|| format!("missing '@' in component '{part}' of '{text}'"))?;
                let ty = self.dynamic_component(head, &mut out)?;
                (ty, value)
            } else {
                (self.params[i].1.clone(), part.as_str())
            };
            let bytes = component_from_string(&ty, value)?;
            let len = u16::try_from(bytes.len())
                .map_err(|_| format!("component '{value}' is longer than 65535 bytes"))?;
            out.extend_from_slice(&len.to_be_bytes());
            out.extend_from_slice(&bytes);
            out.push(0);
        }
        Ok(out)
    }

    /// Writes a `DynamicCompositeType` component's header for `head` (an alias of this type,
    /// or a class name) and returns the component's type.
    fn dynamic_component(&self, head: &str, out: &mut Vec<u8>) -> Result<MarshalType, String> {
        if let Some((_, ty)) = self
            .params
            .iter()
            .find(|(alias, _)| alias.as_deref() == Some(head))
        {
            let byte = match head.as_bytes() {
                [b] => *b,
                _ => return Err(format!("alias '{head}' is not one character")),
            };
            out.extend_from_slice(&(0x8000u16 | u16::from(byte)).to_be_bytes());
            return Ok(ty.clone());
        }
        let ty = MarshalType::parse(head)?;
        let name = ty.to_string();
        let len = u16::try_from(name.len()).map_err(|_| format!("class name {name} too long"))?;
        if len >= 0x8000 {
            return Err(format!("class name {name} too long"));
        }
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(name.as_bytes());
        Ok(ty)
    }
}

impl fmt::Display for MarshalType {
    /// Cassandra's form: full class names, parameters separated by `,` without spaces,
    /// aliases as `s=>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.class)?;
        if self.params.is_empty() {
            return Ok(());
        }
        f.write_str("(")?;
        for (i, (alias, t)) in self.params.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            if let Some(a) = alias {
                write!(f, "{a}=>")?;
            }
            write!(f, "{t}")?;
        }
        f.write_str(")")
    }
}

/// The marshal class Cassandra names `ty` by (`AbstractType.toString`), as a v4 Custom type
/// option carries it: `...marshal.VectorType(org.apache.cassandra.db.marshal.FloatType , 3)`.
pub fn marshal_class(ty: &DataType) -> String {
    let short = |n: &str| format!("{MARSHAL_PACKAGE}{n}");
    match ty {
        DataType::Native(n) => short(match n {
            NativeType::Ascii => "AsciiType",
            NativeType::Bigint => "LongType",
            NativeType::Blob => "BytesType",
            NativeType::Boolean => "BooleanType",
            NativeType::Counter => "CounterColumnType",
            NativeType::Date => "SimpleDateType",
            NativeType::Decimal => "DecimalType",
            NativeType::Double => "DoubleType",
            NativeType::Duration => "DurationType",
            NativeType::Float => "FloatType",
            NativeType::Inet => "InetAddressType",
            NativeType::Int => "Int32Type",
            NativeType::Smallint => "ShortType",
            NativeType::Text => "UTF8Type",
            NativeType::Time => "TimeType",
            NativeType::Timestamp => "TimestampType",
            NativeType::Timeuuid => "TimeUUIDType",
            NativeType::Tinyint => "ByteType",
            NativeType::Uuid => "UUIDType",
            NativeType::Varint => "IntegerType",
        }),
        DataType::List(e) => format!("{}({})", short("ListType"), marshal_class(e)),
        DataType::Set(e) => format!("{}({})", short("SetType"), marshal_class(e)),
        DataType::Map(k, v) => format!(
            "{}({},{})",
            short("MapType"),
            marshal_class(k),
            marshal_class(v)
        ),
        DataType::Frozen(inner) => format!("{}({})", short("FrozenType"), marshal_class(inner)),
        DataType::Tuple(ts) => {
            let parts: Vec<String> = ts.iter().map(marshal_class).collect();
            format!("{}({})", short("TupleType"), parts.join(","))
        }
        DataType::Udt(u) => {
            let hex = |s: &str| s.bytes().map(|b| format!("{b:02x}")).collect::<String>();
            let mut out = format!(
                "{}({},{}",
                short("UserType"),
                u.keyspace.as_deref().unwrap_or(""),
                hex(&u.name)
            );
            for (name, t) in &u.fields {
                out.push_str(&format!(",{}:{}", hex(name), marshal_class(t)));
            }
            out.push(')');
            out
        }
        // `TypeParser.stringifyVectorParameters`: a space on both sides of the comma.
        DataType::Vector(e, n) => format!("{}({} , {n})", short("VectorType"), marshal_class(e)),
        DataType::Custom(class) => class.clone(),
    }
}

/// Splits a composite's string form on `:` not escaped by `\`, unescaping `\:`.
fn split_components(text: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&':') => {
                current.push(':');
                chars.next();
            }
            ':' => parts.push(std::mem::take(&mut current)),
            c => current.push(c),
        }
    }
    parts.push(current);
    parts
}

/// One component's bytes from its string form, as its type's `fromString` gives them.
fn component_from_string(ty: &MarshalType, text: &str) -> Result<Vec<u8>, String> {
    let bad = || format!("'{text}' is not a valid {}", ty.short_name());
    let Some(DataType::Native(native)) = ty.to_cql() else {
        if ty.is_marshal("BytesType") {
            return hex_bytes(text).ok_or_else(bad);
        }
        return Err(format!("{} components are not supported", ty.short_name()));
    };
    Ok(match native {
        NativeType::Text | NativeType::Ascii => text.as_bytes().to_vec(),
        NativeType::Blob => hex_bytes(text).ok_or_else(bad)?,
        NativeType::Int => text
            .parse::<i32>()
            .map_err(|_| bad())?
            .to_be_bytes()
            .to_vec(),
        NativeType::Bigint | NativeType::Counter => text
            .parse::<i64>()
            .map_err(|_| bad())?
            .to_be_bytes()
            .to_vec(),
        NativeType::Smallint => text
            .parse::<i16>()
            .map_err(|_| bad())?
            .to_be_bytes()
            .to_vec(),
        NativeType::Tinyint => text
            .parse::<i8>()
            .map_err(|_| bad())?
            .to_be_bytes()
            .to_vec(),
        NativeType::Double => text
            .parse::<f64>()
            .map_err(|_| bad())?
            .to_be_bytes()
            .to_vec(),
        NativeType::Float => text
            .parse::<f32>()
            .map_err(|_| bad())?
            .to_be_bytes()
            .to_vec(),
        NativeType::Boolean => match text.to_ascii_lowercase().as_str() {
            "true" => vec![1],
            "false" | "" => vec![0],
            _ => return Err(bad()),
        },
        NativeType::Uuid | NativeType::Timeuuid => uuid::Uuid::parse_str(text)
            .map_err(|_| bad())?
            .as_bytes()
            .to_vec(),
        _ => return Err(format!("{} components are not supported", ty.short_name())),
    })
}

fn hex_bytes(text: &str) -> Option<Vec<u8>> {
    let t = text.strip_prefix("0x").unwrap_or(text);
    if t.len() % 2 != 0 {
        return None;
    }
    (0..t.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(t.get(i..i + 2)?, 16).ok())
        .collect()
}

/// A recursive-descent reader of class strings.
struct Parser<'a> {
    text: &'a str,
    pos: usize,
}

impl Parser<'_> {
    fn skip_blank(&mut self) {
        while self.text[self.pos..].starts_with(char::is_whitespace) {
            self.pos += self.text[self.pos..]
                .chars()
                .next()
                .map_or(1, char::len_utf8);
        }
    }

    fn eat(&mut self, s: &str) -> bool {
        self.skip_blank();
        if self.text[self.pos..].starts_with(s) {
            self.pos += s.len();
            true
        } else {
            false
        }
    }

    fn name(&mut self) -> Result<&str, String> {
        self.skip_blank();
        let rest = &self.text[self.pos..];
        let len = rest
            .find(|c: char| {
                !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '$' | '-' | '+'))
            })
            .unwrap_or(rest.len());
        if len == 0 {
            return Err(format!("expected a class name in {}", self.text));
        }
        self.pos += len;
        Ok(&rest[..len])
    }

    fn class(&mut self, depth: usize) -> Result<MarshalType, String> {
        if depth > MAX_DEPTH {
            return Err(format!("type {} nests too deeply", self.text));
        }
        let name = self.name()?;
        let class = if name.contains('.') {
            name.to_string()
        } else {
            format!("{MARSHAL_PACKAGE}{name}")
        };
        let mut params = Vec::new();
        if self.eat("(") && !self.eat(")") {
            loop {
                let start = self.pos;
                let first = self.name()?.to_string();
                let param = if self.eat("=>") {
                    (Some(first), self.class(depth + 1)?)
                } else {
                    self.pos = start;
                    (None, self.class(depth + 1)?)
                };
                params.push(param);
                if self.eat(")") {
                    break;
                }
                if !self.eat(",") {
                    return Err(format!("expected ',' or ')' in {}", self.text));
                }
            }
        }
        Ok(MarshalType { class, params })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CT: &str = "org.apache.cassandra.db.marshal.CompositeType(\
                      org.apache.cassandra.db.marshal.UTF8Type,\
                      org.apache.cassandra.db.marshal.Int32Type)";
    const DCT: &str = "org.apache.cassandra.db.marshal.DynamicCompositeType(\
                       s=>org.apache.cassandra.db.marshal.UTF8Type,\
                       i=>org.apache.cassandra.db.marshal.Int32Type)";

    #[test]
    fn vector_classes_map_both_ways() {
        let class = "org.apache.cassandra.db.marshal.VectorType(\
                     org.apache.cassandra.db.marshal.FloatType , 3)";
        let v = DataType::Vector(Box::new(NativeType::Float.into()), 3);
        assert_eq!(marshal_class(&v), class);
        assert_eq!(MarshalType::parse(class).unwrap().to_cql(), Some(v));
        let nested = DataType::Vector(
            Box::new(DataType::List(Box::new(NativeType::Int.into()))),
            2,
        );
        let text = marshal_class(&nested);
        assert_eq!(MarshalType::parse(&text).unwrap().to_cql(), Some(nested));
        let zero = MarshalType::parse("VectorType(FloatType, 0)").unwrap();
        assert_eq!(zero.to_cql(), None);
    }

    #[test]
    fn short_names_print_as_cassandras_full_class_names() {
        let ct = MarshalType::parse("CompositeType(UTF8Type, Int32Type)").unwrap();
        assert_eq!(ct.to_string(), CT);
        assert_eq!(MarshalType::parse(CT).unwrap(), ct);
        let dct = MarshalType::parse("DynamicCompositeType(s => UTF8Type, i => Int32Type)");
        assert_eq!(dct.unwrap().to_string(), DCT);
        let rev = MarshalType::parse("ReversedType(CompositeType(UTF8Type, Int32Type))").unwrap();
        assert_eq!(rev.reversed(), Some(&ct));
        assert!(MarshalType::parse("CompositeType(UTF8Type").is_err());
        assert!(MarshalType::parse("CompositeType(,)").is_err());
        assert!(MarshalType::parse(&"ListType(".repeat(40)).is_err());
    }

    #[test]
    fn classes_with_a_cql_name_become_cql_types() {
        let cql = |s: &str| {
            MarshalType::parse(s)
                .unwrap()
                .to_cql()
                .map(|t| t.to_string())
        };
        assert_eq!(cql("Int32Type").as_deref(), Some("int"));
        assert_eq!(cql("ListType(Int32Type)").as_deref(), Some("list<int>"));
        assert_eq!(
            cql("MapType(UTF8Type,FrozenType(SetType(UUIDType)))").as_deref(),
            Some("map<text, frozen<set<uuid>>>")
        );
        assert_eq!(cql("CompositeType(UTF8Type)"), None);
        assert_eq!(cql("com.example.Custom"), None);
    }

    #[test]
    fn composites_encode_their_string_form_as_cassandra_lays_them_out() {
        let ct = MarshalType::parse(CT).unwrap();
        let enc = |t: &MarshalType, s: &str| t.composite_from_string(s).unwrap();
        // [u16 length][bytes][end-of-component 0] per component.
        let foo32: Vec<u8> = [&[0, 3][..], b"foo", &[0], &[0, 4, 0, 0, 0, 32, 0]].concat();
        assert_eq!(enc(&ct, "foo:32"), Ok(foo32));
        assert_eq!(enc(&ct, ":42"), Ok(vec![0, 0, 0, 0, 4, 0, 0, 0, 42, 0]));
        assert_eq!(enc(&ct, "foo"), Ok([&[0, 3][..], b"foo", &[0]].concat()));
        assert_eq!(enc(&ct, "a\\:b"), Ok([&[0, 3][..], b"a:b", &[0]].concat()));
        assert!(enc(&ct, "foo:bar").is_err());
        assert!(enc(&ct, "a:1:2").is_err());
        // DynamicCompositeType: an alias is 0x8000 | its byte, then the component.
        let dct = MarshalType::parse(DCT).unwrap();
        let i12_3 = vec![
            0x80, b'i', 0, 4, 0, 0, 0, 12, 0, 0x80, b'i', 0, 4, 0, 0, 0, 3, 0,
        ];
        assert_eq!(enc(&dct, "i@12:i@3"), Ok(i12_3));
        let s_foo: Vec<u8> = [&[0x80, b's', 0, 3][..], b"foo", &[0]].concat();
        assert_eq!(enc(&dct, "s@foo"), Ok(s_foo));
        // A class name instead of an alias is written whole.
        let by_class = enc(&dct, "LongType@7").unwrap();
        let name = "org.apache.cassandra.db.marshal.LongType";
        assert_eq!(&by_class[..2], &(name.len() as u16).to_be_bytes());
        assert_eq!(&by_class[2..2 + name.len()], name.as_bytes());
        assert!(enc(&dct, "foo").is_err());
        assert_eq!(
            MarshalType::parse("Int32Type")
                .unwrap()
                .composite_from_string("1"),
            None
        );
    }
}
