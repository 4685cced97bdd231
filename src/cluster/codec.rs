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
