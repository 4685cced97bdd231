//! User-defined functions and aggregates: `CREATE`/`DROP FUNCTION` and `CREATE`/`DROP AGGREGATE`.

use std::fmt;

use super::{if_exists, if_not_exists, Expr, Ident, QualifiedName, StrLit, TypeSyntax};
use crate::types::DataType;

/// `CREATE [OR REPLACE] FUNCTION [IF NOT EXISTS] name (arg type, ...) {CALLED | RETURNS NULL} ON
/// NULL INPUT RETURNS type LANGUAGE lang AS 'body'`.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateFunction {
    /// The function.
    pub name: QualifiedName,
    /// `OR REPLACE`.
    pub or_replace: bool,
    /// `IF NOT EXISTS`.
    pub if_not_exists: bool,
    /// Arguments `(name, type)`, in order.
    pub args: Vec<(String, DataType)>,
    /// `CALLED ON NULL INPUT` (true) or `RETURNS NULL ON NULL INPUT` (false).
    pub called_on_null_input: bool,
    /// The return type.
    pub return_type: DataType,
    /// The language, lower-cased.
    pub language: String,
    /// The body, unescaped.
    pub body: String,
}

/// `DROP FUNCTION [IF EXISTS] name [(type, ...)]`.
#[derive(Debug, Clone, PartialEq)]
pub struct DropFunction {
    /// The function.
    pub name: QualifiedName,
    /// `IF EXISTS`.
    pub if_exists: bool,
    /// The argument types when an overload is named; `None` drops the only one.
    pub arg_types: Option<Vec<DataType>>,
}

/// `CREATE [OR REPLACE] AGGREGATE [IF NOT EXISTS] name (type, ...) SFUNC f STYPE t
/// [FINALFUNC g] [INITCOND term]`.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateAggregate {
    /// The aggregate.
    pub name: QualifiedName,
    /// `OR REPLACE`.
    pub or_replace: bool,
    /// `IF NOT EXISTS`.
    pub if_not_exists: bool,
    /// Argument types, in order.
    pub arg_types: Vec<DataType>,
    /// The state function (unqualified, in the aggregate's keyspace).
    pub state_func: String,
    /// The state type.
    pub state_type: DataType,
    /// The final function, if any.
    pub final_func: Option<String>,
    /// The initial state, if any.
    pub initcond: Option<Expr>,
}

/// `DROP AGGREGATE [IF EXISTS] name [(type, ...)]`.
#[derive(Debug, Clone, PartialEq)]
pub struct DropAggregate {
    /// The aggregate.
    pub name: QualifiedName,
    /// `IF EXISTS`.
    pub if_exists: bool,
    /// The argument types when an overload is named.
    pub arg_types: Option<Vec<DataType>>,
}

/// Prints `(t1, t2)` for argument types.
struct TypeList<'a>(&'a [DataType]);

impl fmt::Display for TypeList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("(")?;
        for (i, t) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            TypeSyntax(t).fmt(f)?;
        }
        f.write_str(")")
    }
}

impl fmt::Display for CreateFunction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CREATE ")?;
        if self.or_replace {
            f.write_str("OR REPLACE ")?;
        }
        write!(
            f,
            "FUNCTION{} {} (",
            if_not_exists(self.if_not_exists),
            self.name
        )?;
        for (i, (name, t)) in self.args.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{} {}", Ident(name), TypeSyntax(t))?;
        }
        let on_null = if self.called_on_null_input {
            "CALLED"
        } else {
            "RETURNS NULL"
        };
        write!(
            f,
            ") {on_null} ON NULL INPUT RETURNS {} LANGUAGE {} AS {}",
            TypeSyntax(&self.return_type),
            Ident(&self.language),
            StrLit(&self.body)
        )
    }
}

impl fmt::Display for DropFunction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "DROP FUNCTION{} {}",
            if_exists(self.if_exists),
            self.name
        )?;
        match &self.arg_types {
            Some(types) => TypeList(types).fmt(f),
            None => Ok(()),
        }
    }
}

impl fmt::Display for CreateAggregate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CREATE ")?;
        if self.or_replace {
            f.write_str("OR REPLACE ")?;
        }
        write!(
            f,
            "AGGREGATE{} {}{} SFUNC {} STYPE {}",
            if_not_exists(self.if_not_exists),
            self.name,
            TypeList(&self.arg_types),
            Ident(&self.state_func),
            TypeSyntax(&self.state_type)
        )?;
        if let Some(g) = &self.final_func {
            write!(f, " FINALFUNC {}", Ident(g))?;
        }
        if let Some(init) = &self.initcond {
            write!(f, " INITCOND {init}")?;
        }
        Ok(())
    }
}

impl fmt::Display for DropAggregate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "DROP AGGREGATE{} {}",
            if_exists(self.if_exists),
            self.name
        )?;
        match &self.arg_types {
            Some(types) => TypeList(types).fmt(f),
            None => Ok(()),
        }
    }
}
