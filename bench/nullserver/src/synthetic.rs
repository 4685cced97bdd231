//! Made-up cells for reads: one serialized value per column type, so that a read answers
//! rows of the size and shape ringdb would (a text or blob is `value_size` bytes).

use cql::types::{DataType, NativeType};

/// The serialized value a synthesized row holds for a column of `data_type`; `None` (null)
/// for types no benchmark reads.
pub(crate) fn value(data_type: &DataType, value_size: usize) -> Option<Vec<u8>> {
    let DataType::Native(t) = data_type.unfrozen() else {
        return None;
    };
    Some(match t {
        NativeType::Boolean => vec![1],
        NativeType::Tinyint => vec![7],
        NativeType::Smallint => 7i16.to_be_bytes().to_vec(),
        NativeType::Int | NativeType::Date => 7i32.to_be_bytes().to_vec(),
        NativeType::Bigint | NativeType::Counter | NativeType::Timestamp | NativeType::Time => {
            7i64.to_be_bytes().to_vec()
        }
        NativeType::Float => 7f32.to_be_bytes().to_vec(),
        NativeType::Double => 7f64.to_be_bytes().to_vec(),
        NativeType::Uuid => vec![0x11; 16],
        // A version 1 UUID: version nibble 1, variant bits 10.
        NativeType::Timeuuid => {
            let mut u = vec![0x11; 16];
            u[6] = 0x11;
            u[8] = 0x91;
            u
        }
        NativeType::Text | NativeType::Ascii | NativeType::Blob => vec![b'x'; value_size],
        NativeType::Inet => vec![127, 0, 0, 1],
        NativeType::Varint => vec![7],
        NativeType::Decimal => vec![0, 0, 0, 0, 7],
        NativeType::Duration => vec![0, 0, 14],
    })
}

/// Appends a `[bytes]` cell (length -1 for null) to `out`.
pub(crate) fn push_cell(out: &mut Vec<u8>, cell: Option<&[u8]>) {
    cql::wire::write_bytes(out, cell);
}

/// A serialized `set<text>` or `list<text>`.
pub(crate) fn text_collection<'a>(items: impl IntoIterator<Item = &'a str>) -> Vec<u8> {
    let items: Vec<&str> = items.into_iter().collect();
    let mut out = (items.len() as i32).to_be_bytes().to_vec();
    for item in items {
        push_cell(&mut out, Some(item.as_bytes()));
    }
    out
}

/// A serialized `map<text, text>`.
pub(crate) fn text_map<'a>(entries: impl IntoIterator<Item = (&'a str, &'a str)>) -> Vec<u8> {
    let entries: Vec<(&str, &str)> = entries.into_iter().collect();
    let mut out = (entries.len() as i32).to_be_bytes().to_vec();
    for (k, v) in entries {
        push_cell(&mut out, Some(k.as_bytes()));
        push_cell(&mut out, Some(v.as_bytes()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_width_values_have_their_width() {
        for t in [NativeType::Int, NativeType::Bigint, NativeType::Uuid] {
            let ty = DataType::Native(t);
            assert_eq!(value(&ty, 100).map(|v| v.len()), ty.fixed_width());
        }
        let text = DataType::Native(NativeType::Text);
        assert_eq!(value(&text, 100).map(|v| v.len()), Some(100));
    }

    #[test]
    fn collections_are_counted_then_framed() {
        assert_eq!(text_collection(["a"]), vec![0, 0, 0, 1, 0, 0, 0, 1, b'a']);
        assert_eq!(
            text_map([("k", "v")]),
            vec![0, 0, 0, 1, 0, 0, 0, 1, b'k', 0, 0, 0, 1, b'v']
        );
    }
}
