//! Shared fuzz properties; see [`checks`].

pub mod checks;
