//! Schema statements: keyspaces, tables, user types and indexes.

use std::fmt;

use super::Expr;
use super::{
    if_exists, if_not_exists, Comma, Ident, Order, Properties, QualifiedName, StrLit, TypeSyntax,
};
use crate::types::DataType;

/// The value of a `WITH name = value` property.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OptionValue {
    /// A string literal (unescaped).
    String(String),
    /// A number, boolean, duration, UUID or blob constant, kept as written (`1`, `0.1`, `true`).
    Constant(String),
    /// `{key: value, ...}`, in the order written.
    Map(Vec<(OptionValue, OptionValue)>),
    /// A bare word (lower-cased unless quoted).
    Identifier(String),
}

/// A column in `CREATE TABLE` or `ALTER TABLE ... ADD`.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnDef {
    /// The column's name.
    pub name: String,
    /// Its type.
    pub data_type: DataType,
    /// `STATIC`.
    pub is_static: bool,
    /// `MASKED WITH ...`.
    pub mask: Option<ColumnMaskDef>,
}

/// A column mask (Cassandra 5.0's dynamic data masking): `MASKED WITH fn(args)`, a masking
/// function whose first argument is the column's value and whose other arguments are given
/// here. `MASKED WITH DEFAULT` is `mask_default()`.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnMaskDef {
    /// The function.
    pub function: QualifiedName,
    /// The arguments after the column's value (terms, usually constants).
    pub args: Vec<Expr>,
}

/// The `WITH` clause of `CREATE TABLE`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TableOptions {
    /// `name = value` properties, in the order written.
    pub properties: Vec<(String, OptionValue)>,
    /// `CLUSTERING ORDER BY (c1 ASC, c2 DESC)`.
    pub clustering_order: Vec<(String, Order)>,
    /// `COMPACT STORAGE`.
    pub compact_storage: bool,
}

/// `CREATE KEYSPACE [IF NOT EXISTS] name WITH ...`.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateKeyspace {
    /// The keyspace.
    pub name: String,
    /// `IF NOT EXISTS`.
    pub if_not_exists: bool,
    /// `replication = {...}`, `durable_writes = ...`.
    pub options: Vec<(String, OptionValue)>,
}

/// `ALTER KEYSPACE [IF EXISTS] name WITH ...`.
#[derive(Debug, Clone, PartialEq)]
pub struct AlterKeyspace {
    /// The keyspace.
    pub name: String,
    /// `IF EXISTS`.
    pub if_exists: bool,
    /// The new properties.
    pub options: Vec<(String, OptionValue)>,
}

/// `DROP KEYSPACE [IF EXISTS] name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DropKeyspace {
    /// The keyspace.
    pub name: String,
    /// `IF EXISTS`.
    pub if_exists: bool,
}

/// `CREATE TABLE [IF NOT EXISTS] name (columns..., PRIMARY KEY (...)) [WITH ...]`.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateTable {
    /// The table.
    pub name: QualifiedName,
    /// `IF NOT EXISTS`.
    pub if_not_exists: bool,
    /// Column definitions, in the order written.
    pub columns: Vec<ColumnDef>,
    /// Partition-key columns (from `PRIMARY KEY` on a column or in the key clause).
    pub partition_key: Vec<String>,
    /// Clustering columns.
    pub clustering_key: Vec<String>,
    /// The `WITH` clause.
    pub options: TableOptions,
}

/// What an `ALTER TABLE` does.
#[derive(Debug, Clone, PartialEq)]
pub enum AlterTableOp {
    /// `ALTER column TYPE type`.
    AlterColumnType(String, DataType),
    /// `ALTER column MASKED WITH ...`, or with `None` `ALTER column DROP MASKED`.
    MaskColumn(String, Option<ColumnMaskDef>),
    /// `ADD [IF NOT EXISTS] column type [STATIC]` or `ADD (c1 t1, c2 t2)`.
    Add {
        /// The new columns.
        columns: Vec<ColumnDef>,
        /// `IF NOT EXISTS`.
        if_not_exists: bool,
    },
    /// `DROP [IF EXISTS] column` or `DROP (c1, c2)` [`USING TIMESTAMP t`].
    Drop {
        /// The dropped columns.
        columns: Vec<String>,
        /// `IF EXISTS`.
        if_exists: bool,
        /// `USING TIMESTAMP t`.
        timestamp: Option<i64>,
    },
    /// `RENAME [IF EXISTS] a TO b AND c TO d`.
    Rename {
        /// `(from, to)` pairs.
        renames: Vec<(String, String)>,
        /// `IF EXISTS`.
        if_exists: bool,
    },
    /// `DROP COMPACT STORAGE`.
    DropCompactStorage,
    /// `WITH name = value AND ...`.
    With(Vec<(String, OptionValue)>),
}

/// `ALTER TABLE [IF EXISTS] name ...`.
#[derive(Debug, Clone, PartialEq)]
pub struct AlterTable {
    /// The table.
    pub name: QualifiedName,
    /// `IF EXISTS`.
    pub if_exists: bool,
    /// The change.
    pub op: AlterTableOp,
}

/// `DROP TABLE [IF EXISTS] name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DropTable {
    /// The table.
    pub name: QualifiedName,
    /// `IF EXISTS`.
    pub if_exists: bool,
}

/// `CREATE TYPE [IF NOT EXISTS] name (field type, ...)`.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateType {
    /// The type.
    pub name: QualifiedName,
    /// `IF NOT EXISTS`.
    pub if_not_exists: bool,
    /// Fields, in the order written.
    pub fields: Vec<(String, DataType)>,
}

/// What an `ALTER TYPE` does.
#[derive(Debug, Clone, PartialEq)]
pub enum AlterTypeOp {
    /// `ALTER field TYPE type`.
    AlterFieldType(String, DataType),
    /// `ADD [IF NOT EXISTS] field type`.
    Add {
        /// The field's name.
        field: String,
        /// Its type.
        data_type: DataType,
        /// `IF NOT EXISTS`.
        if_not_exists: bool,
    },
    /// `RENAME [IF EXISTS] a TO b AND ...`.
    Rename {
        /// `(from, to)` pairs.
        renames: Vec<(String, String)>,
        /// `IF EXISTS`.
        if_exists: bool,
    },
}

/// `ALTER TYPE [IF EXISTS] name ...`.
#[derive(Debug, Clone, PartialEq)]
pub struct AlterType {
    /// The type.
    pub name: QualifiedName,
    /// `IF EXISTS`.
    pub if_exists: bool,
    /// The change.
    pub op: AlterTypeOp,
}

/// `DROP TYPE [IF EXISTS] name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DropType {
    /// The type.
    pub name: QualifiedName,
    /// `IF EXISTS`.
    pub if_exists: bool,
}

/// What an index is built on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexTarget {
    /// `(c)`: a regular column, or the values of a collection.
    Column(String),
    /// `(KEYS(c))`: map keys.
    Keys(String),
    /// `(VALUES(c))`: collection values.
    Values(String),
    /// `(ENTRIES(c))`: map entries.
    Entries(String),
    /// `(FULL(c))`: a whole frozen collection.
    Full(String),
}

/// `CREATE [CUSTOM] INDEX [IF NOT EXISTS] [name] ON table (target) [USING 'class'] [WITH ...]`.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateIndex {
    /// The index name, when given.
    pub name: Option<String>,
    /// The indexed table.
    pub table: QualifiedName,
    /// The indexed column.
    pub target: IndexTarget,
    /// `IF NOT EXISTS`.
    pub if_not_exists: bool,
    /// `CUSTOM`.
    pub custom: bool,
    /// `USING 'class'`.
    pub custom_class: Option<String>,
    /// `WITH options = {...}`.
    pub options: Vec<(String, OptionValue)>,
}

/// `DROP INDEX [IF EXISTS] [ks.]name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DropIndex {
    /// The index.
    pub name: QualifiedName,
    /// `IF EXISTS`.
    pub if_exists: bool,
}

impl fmt::Display for OptionValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OptionValue::String(s) => StrLit(s).fmt(f),
            OptionValue::Constant(c) => f.write_str(c),
            OptionValue::Identifier(i) => Ident(i).fmt(f),
            OptionValue::Map(entries) => {
                f.write_str("{")?;
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{k}: {v}")?;
                }
                f.write_str("}")
            }
        }
    }
}

impl fmt::Display for ColumnDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", Ident(&self.name), TypeSyntax(&self.data_type))?;
        if self.is_static {
            f.write_str(" STATIC")?;
        }
        if let Some(mask) = &self.mask {
            write!(f, " {mask}")?;
        }
        Ok(())
    }
}

/// `MASKED WITH fn(args)`.
impl fmt::Display for ColumnMaskDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MASKED WITH {}({})", self.function, Comma(&self.args))
    }
}

pub(crate) struct Names<'a>(pub(crate) &'a [String]);

/// `PRIMARY KEY (pk, c1, c2)` (`((p1, p2), c1)` for a composite partition key).
pub(crate) struct PrimaryKey<'a>(pub(crate) &'a [String], pub(crate) &'a [String]);

impl fmt::Display for PrimaryKey<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PRIMARY KEY (")?;
        if self.0.len() == 1 {
            Names(self.0).fmt(f)?;
        } else {
            write!(f, "({})", Names(self.0))?;
        }
        for c in self.1 {
            write!(f, ", {}", Ident(c))?;
        }
        f.write_str(")")
    }
}

impl fmt::Display for Names<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let idents: Vec<_> = self.0.iter().map(|c| Ident(c)).collect();
        Comma(&idents).fmt(f)
    }
}

struct Renames<'a>(&'a [(String, String)]);

impl fmt::Display for Renames<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (from, to)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(" AND ")?;
            }
            write!(f, "{} TO {}", Ident(from), Ident(to))?;
        }
        Ok(())
    }
}

impl fmt::Display for CreateKeyspace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "CREATE KEYSPACE{} {} WITH {}",
            if_not_exists(self.if_not_exists),
            Ident(&self.name),
            Properties(&self.options)
        )
    }
}

impl fmt::Display for AlterKeyspace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ALTER KEYSPACE{} {} WITH {}",
            if_exists(self.if_exists),
            Ident(&self.name),
            Properties(&self.options)
        )
    }
}

impl fmt::Display for DropKeyspace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "DROP KEYSPACE{} {}",
            if_exists(self.if_exists),
            Ident(&self.name)
        )
    }
}

impl fmt::Display for CreateTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "CREATE TABLE{} {} ({}",
            if_not_exists(self.if_not_exists),
            self.name,
            Comma(&self.columns)
        )?;
        if !self.partition_key.is_empty() {
            if !self.columns.is_empty() {
                f.write_str(", ")?;
            }
            PrimaryKey(&self.partition_key, &self.clustering_key).fmt(f)?;
        }
        f.write_str(")")?;
        WithOptions(&self.options).fmt(f)
    }
}

/// ` WITH CLUSTERING ORDER BY (...) AND COMPACT STORAGE AND name = value ...`: a table's or a
/// view's options, or nothing when there are none.
pub(crate) struct WithOptions<'a>(pub(crate) &'a TableOptions);

impl fmt::Display for WithOptions<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = self.0;
        let mut sep = " WITH ";
        if !o.clustering_order.is_empty() {
            f.write_str(sep)?;
            f.write_str("CLUSTERING ORDER BY (")?;
            for (i, (c, order)) in o.clustering_order.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{} {order}", Ident(c))?;
            }
            f.write_str(")")?;
            sep = " AND ";
        }
        if o.compact_storage {
            write!(f, "{sep}COMPACT STORAGE")?;
            sep = " AND ";
        }
        if !o.properties.is_empty() {
            write!(f, "{sep}{}", Properties(&o.properties))?;
        }
        Ok(())
    }
}

impl fmt::Display for AlterTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ALTER TABLE{} {} ", if_exists(self.if_exists), self.name)?;
        match &self.op {
            AlterTableOp::AlterColumnType(c, t) => {
                write!(f, "ALTER {} TYPE {}", Ident(c), TypeSyntax(t))
            }
            AlterTableOp::MaskColumn(c, Some(mask)) => write!(f, "ALTER {} {mask}", Ident(c)),
            AlterTableOp::MaskColumn(c, None) => write!(f, "ALTER {} DROP MASKED", Ident(c)),
            AlterTableOp::Add {
                columns,
                if_not_exists: ine,
            } => write!(f, "ADD{} ({})", if_not_exists(*ine), Comma(columns)),
            AlterTableOp::Drop {
                columns,
                if_exists: ie,
                timestamp,
            } => {
                write!(f, "DROP{} ({})", if_exists(*ie), Names(columns))?;
                if let Some(ts) = timestamp {
                    write!(f, " USING TIMESTAMP {ts}")?;
                }
                Ok(())
            }
            AlterTableOp::Rename {
                renames,
                if_exists: ie,
            } => write!(f, "RENAME{} {}", if_exists(*ie), Renames(renames)),
            AlterTableOp::DropCompactStorage => f.write_str("DROP COMPACT STORAGE"),
            AlterTableOp::With(props) => write!(f, "WITH {}", Properties(props)),
        }
    }
}

impl fmt::Display for DropTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DROP TABLE{} {}", if_exists(self.if_exists), self.name)
    }
}

impl fmt::Display for CreateType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "CREATE TYPE{} {} (",
            if_not_exists(self.if_not_exists),
            self.name
        )?;
        for (i, (name, t)) in self.fields.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{} {}", Ident(name), TypeSyntax(t))?;
        }
        f.write_str(")")
    }
}

impl fmt::Display for AlterType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ALTER TYPE{} {} ", if_exists(self.if_exists), self.name)?;
        match &self.op {
            AlterTypeOp::AlterFieldType(field, t) => {
                write!(f, "ALTER {} TYPE {}", Ident(field), TypeSyntax(t))
            }
            AlterTypeOp::Add {
                field,
                data_type,
                if_not_exists: ine,
            } => write!(
                f,
                "ADD{} {} {}",
                if_not_exists(*ine),
                Ident(field),
                TypeSyntax(data_type)
            ),
            AlterTypeOp::Rename {
                renames,
                if_exists: ie,
            } => write!(f, "RENAME{} {}", if_exists(*ie), Renames(renames)),
        }
    }
}

impl fmt::Display for DropType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DROP TYPE{} {}", if_exists(self.if_exists), self.name)
    }
}

impl fmt::Display for IndexTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IndexTarget::Column(c) => Ident(c).fmt(f),
            IndexTarget::Keys(c) => write!(f, "KEYS({})", Ident(c)),
            IndexTarget::Values(c) => write!(f, "VALUES({})", Ident(c)),
            IndexTarget::Entries(c) => write!(f, "ENTRIES({})", Ident(c)),
            IndexTarget::Full(c) => write!(f, "FULL({})", Ident(c)),
        }
    }
}

impl fmt::Display for CreateIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.custom {
            "CREATE CUSTOM INDEX"
        } else {
            "CREATE INDEX"
        })?;
        f.write_str(if_not_exists(self.if_not_exists))?;
        if let Some(name) = &self.name {
            write!(f, " {}", Ident(name))?;
        }
        write!(f, " ON {} ({})", self.table, self.target)?;
        if let Some(class) = &self.custom_class {
            write!(f, " USING {}", StrLit(class))?;
        }
        if !self.options.is_empty() {
            write!(f, " WITH {}", Properties(&self.options))?;
        }
        Ok(())
    }
}

impl fmt::Display for DropIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DROP INDEX{} {}", if_exists(self.if_exists), self.name)
    }
}
