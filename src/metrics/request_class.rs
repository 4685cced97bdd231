//! `RequestClass`: what a CQL request does, as the request series label it (`kind`).

use cql::ast::Statement;

/// What a request does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestClass {
    /// A SELECT.
    Read,
    /// An INSERT, UPDATE or DELETE without conditions.
    Write,
    /// A lightweight transaction (a write with IF, or a batch holding one).
    Cas,
    /// A BATCH without conditions.
    Batch,
    /// A schema change, TRUNCATE or USE.
    Schema,
    /// A PREPARE.
    Prepare,
    /// Anything else (roles, permissions, DESCRIBE, a statement not found).
    Other,
}

impl RequestClass {
    /// Every class, in the order of [`RequestClass::index`].
    pub const ALL: [RequestClass; 7] = [
        RequestClass::Read,
        RequestClass::Write,
        RequestClass::Cas,
        RequestClass::Batch,
        RequestClass::Schema,
        RequestClass::Prepare,
        RequestClass::Other,
    ];

    /// The class of `statement`.
    pub fn of(statement: &Statement) -> RequestClass {
        if statement.is_conditional() {
            return RequestClass::Cas;
        }
        match statement {
            Statement::Select(_) => RequestClass::Read,
            Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_) => {
                RequestClass::Write
            }
            Statement::Batch(_) => RequestClass::Batch,
            Statement::Use(_)
            | Statement::Truncate(_)
            | Statement::CreateKeyspace(_)
            | Statement::AlterKeyspace(_)
            | Statement::DropKeyspace(_)
            | Statement::CreateTable(_)
            | Statement::AlterTable(_)
            | Statement::DropTable(_)
            | Statement::CreateType(_)
            | Statement::AlterType(_)
            | Statement::DropType(_)
            | Statement::CreateFunction(_)
            | Statement::DropFunction(_)
            | Statement::CreateAggregate(_)
            | Statement::DropAggregate(_)
            | Statement::CreateIndex(_)
            | Statement::DropIndex(_) => RequestClass::Schema,
            _ => RequestClass::Other,
        }
    }

    /// Its position in [`RequestClass::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// The `kind` label.
    pub fn label(self) -> &'static str {
        match self {
            RequestClass::Read => "read",
            RequestClass::Write => "write",
            RequestClass::Cas => "cas",
            RequestClass::Batch => "batch",
            RequestClass::Schema => "schema",
            RequestClass::Prepare => "prepare",
            RequestClass::Other => "other",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_fall_in_their_class() {
        let class = |cql: &str| RequestClass::of(&cql::parse_statement(cql).expect("parses"));
        assert_eq!(class("SELECT * FROM ks.t"), RequestClass::Read);
        assert_eq!(
            class("INSERT INTO ks.t (k) VALUES (1)"),
            RequestClass::Write
        );
        assert_eq!(
            class("INSERT INTO ks.t (k) VALUES (1) IF NOT EXISTS"),
            RequestClass::Cas
        );
        assert_eq!(
            class("UPDATE ks.t SET v = 1 WHERE k = 1 IF v = 2"),
            RequestClass::Cas
        );
        assert_eq!(
            class("BEGIN BATCH INSERT INTO ks.t (k) VALUES (1); APPLY BATCH"),
            RequestClass::Batch
        );
        assert_eq!(
            class("CREATE TABLE ks.t (k int PRIMARY KEY)"),
            RequestClass::Schema
        );
        assert_eq!(class("LIST ROLES"), RequestClass::Other);
        for (i, c) in RequestClass::ALL.iter().enumerate() {
            assert_eq!(c.index(), i);
        }
    }
}
