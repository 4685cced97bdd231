//! CQL native protocol (frames, messages, type codecs) and the CQL language (lexer, nom parser,
//! AST). Synchronous and free of I/O: no tokio, no fjall.

pub mod ast;
pub mod compression;
mod consistency;
pub mod frame;
pub mod request;
pub mod response;
pub mod syntax;
pub mod types;
pub mod wire;

pub use syntax::{parse_data_type, parse_statement, parse_statements, parse_term, ParseError};
