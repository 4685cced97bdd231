//! The one encoding of everything the cluster stores or sends: postcard (compact, serde).

/// Why bytes could not be encoded or decoded.
pub type CodecError = postcard::Error;

/// Encodes a value.
///
/// # Errors
/// When serde refuses the value.
pub fn encode<T: serde::Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, CodecError> {
    postcard::to_stdvec(value)
}

/// Decodes a value; bytes from a peer or the disk may be anything, so this never panics.
///
/// # Errors
/// When the bytes are not a valid encoding of `T`.
pub fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, CodecError> {
    postcard::from_bytes(bytes)
}

/// Decodes a value that must take every byte (a saved layout read as another fails rather
/// than leave bytes over).
///
/// # Errors
/// When the bytes are not exactly a valid encoding of `T`.
pub fn decode_whole<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, CodecError> {
    match postcard::take_from_bytes(bytes)? {
        (value, []) => Ok(value),
        _ => Err(postcard::Error::DeserializeBadEncoding),
    }
}
