//! Password hashing (bcrypt, as Cassandra's `CassandraRoleManager` stores it) and the SASL PLAIN
//! token of `AUTH_RESPONSE`.
//!
//! Hashes are written in jBCrypt's `$2a$` form so that `salted_hash` values move between
//! Cassandra and ringdb (`CREATE ROLE ... WITH HASHED PASSWORD`).

use super::AuthError;

/// 2^10 bcrypt rounds: Cassandra's default `auth_bcrypt_gensalt_log2_rounds`.
pub const BCRYPT_COST: u32 = 10;

/// A hash checked when the user does not exist, so that a wrong user name costs the same time
/// as a wrong password.
static DUMMY_HASH: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Hashes `password` with a fresh salt.
///
/// # Errors
/// Only if the system random source fails.
pub fn hash(password: &str) -> Result<String, AuthError> {
    bcrypt::hash_with_result(password, BCRYPT_COST)
        .map(|parts| parts.format_for_version(bcrypt::Version::TwoA))
        .map_err(|e| AuthError::Hash(e.to_string()))
}

/// True when `password` matches `hash`; a malformed hash never matches.
pub fn verify(password: &str, hash: &str) -> bool {
    bcrypt::verify(password, hash).unwrap_or(false)
}

/// Spends the time of one verification without a real hash (unknown users).
pub fn verify_dummy(password: &str) {
    let dummy = DUMMY_HASH.get_or_init(|| hash("ringdb: no such role").unwrap_or_default());
    let _ = bcrypt::verify(password, dummy);
}

/// True when `hash` is a bcrypt hash (`$2a$`, `$2b$`, `$2x$` or `$2y$`).
pub fn is_bcrypt_hash(hash: &str) -> bool {
    hash.parse::<bcrypt::HashParts>().is_ok()
}

/// Decodes a SASL PLAIN token `[authzid] NUL authcid NUL passwd` into (user, password),
/// with Cassandra's `PlainTextSaslAuthenticator` messages for malformed tokens.
///
/// # Errors
/// The message for a BadCredentials answer.
pub fn decode_plain(token: &[u8]) -> Result<(String, String), String> {
    let mut parts = token.rsplitn(3, |b| *b == 0);
    let password = parts.next().unwrap_or_default();
    let user = parts.next();
    if parts.next().is_some_and(|authzid| authzid.contains(&0)) {
        return Err(
            "Credential format error: username or password is empty or contains NUL(\\0) character"
                .into(),
        );
    }
    let Some(user) = user else {
        return Err("Authentication ID must not be null".into());
    };
    if password.is_empty() {
        return Err("Password must not be null".into());
    }
    if user.is_empty() {
        return Err("Authentication ID must not be null".into());
    }
    let user = String::from_utf8(user.to_vec()).map_err(|_| "Invalid UTF-8 in username")?;
    let password = String::from_utf8(password.to_vec()).map_err(|_| "Invalid UTF-8 in password")?;
    Ok((user, password))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_verify_and_are_salted() {
        let a = hash("secret").expect("hash");
        let b = hash("secret").expect("hash");
        assert_ne!(a, b, "a fresh salt each time");
        assert!(a.starts_with("$2a$10$"));
        assert!(verify("secret", &a));
        assert!(!verify("Secret", &a));
        assert!(!verify("secret", "not a hash"));
        assert!(is_bcrypt_hash(&a));
        assert!(!is_bcrypt_hash("plain"));
        let b2 = a.replacen("$2a$", "$2b$", 1);
        assert!(verify("secret", &b2), "other bcrypt variants verify too");
    }

    #[test]
    fn sasl_plain_tokens_decode() {
        assert_eq!(
            decode_plain(b"\0alice\0pw").expect("ok"),
            ("alice".into(), "pw".into())
        );
        assert_eq!(
            decode_plain(b"authz\0alice\0pw").expect("ok"),
            ("alice".into(), "pw".into())
        );
        assert!(decode_plain(b"\0alice\0").is_err());
        assert!(decode_plain(b"\0\0pw").is_err());
        assert!(decode_plain(b"alice").is_err());
        assert!(decode_plain(b"").is_err());
        assert!(decode_plain(b"a\0b\0c\0d").is_err());
    }
}
