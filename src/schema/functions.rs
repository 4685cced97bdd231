//! User-defined functions and aggregates as the catalog keeps them (a keyspace's
//! `functions` and `aggregates`, persisted and replicated with the rest of the catalog), and
//! their lookup by name and argument types.

use super::{Catalog, Keyspace};
use cql::types::DataType;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// A user-defined function (`system_schema.functions`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionDef {
    /// Owning keyspace.
    pub keyspace: String,
    /// Function name.
    pub name: String,
    /// Argument names, in order.
    pub arg_names: Vec<String>,
    /// Argument types, in order (as parsed; UDT references resolved on use).
    #[serde(with = "super::type_list_text")]
    pub arg_types: Vec<DataType>,
    /// The result type (as parsed).
    #[serde(with = "super::type_text")]
    pub return_type: DataType,
    /// `CALLED ON NULL INPUT` (true) or `RETURNS NULL ON NULL INPUT` (false).
    pub called_on_null_input: bool,
    /// The language, lower-case (`lua`, or `java` when the schema accepts it).
    pub language: String,
    /// The body.
    pub body: String,
}

/// A user-defined aggregate (`system_schema.aggregates`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AggregateDef {
    /// Owning keyspace.
    pub keyspace: String,
    /// Aggregate name.
    pub name: String,
    /// Argument types, in order (as parsed).
    #[serde(with = "super::type_list_text")]
    pub arg_types: Vec<DataType>,
    /// The state function, in the aggregate's keyspace.
    pub state_func: String,
    /// The state type (as parsed).
    #[serde(with = "super::type_text")]
    pub state_type: DataType,
    /// The final function, if any.
    pub final_func: Option<String>,
    /// The initial state as a CQL literal, if any.
    pub initcond: Option<String>,
    /// The result type: the final function's, else the state type.
    #[serde(with = "super::type_text")]
    pub return_type: DataType,
}

/// The key a function or aggregate is stored under: its name and argument types,
/// `name(int, text)`, so overloads sit side by side in name order.
pub fn signature_key(name: &str, arg_types: &[DataType]) -> String {
    format!("{name}({})", type_list(arg_types))
}

/// Argument types as Cassandra prints them in messages: `int, text`.
pub fn type_list(arg_types: &[DataType]) -> String {
    arg_types
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

impl FunctionDef {
    /// `ks.name`.
    pub fn qualified_name(&self) -> String {
        format!("{}.{}", self.keyspace, self.name)
    }
}

impl Keyspace {
    /// The function overloads named `name`.
    pub fn functions_named<'a>(
        &'a self,
        name: &'a str,
    ) -> impl Iterator<Item = &'a Arc<FunctionDef>> + 'a {
        self.functions.values().filter(move |f| f.name == name)
    }

    /// The aggregate overloads named `name`.
    pub fn aggregates_named<'a>(
        &'a self,
        name: &'a str,
    ) -> impl Iterator<Item = &'a Arc<AggregateDef>> + 'a {
        self.aggregates.values().filter(move |a| a.name == name)
    }

    /// The function `name` taking exactly `arg_types` (frozen or not).
    pub fn function(&self, name: &str, arg_types: &[DataType]) -> Option<&Arc<FunctionDef>> {
        self.functions
            .values()
            .find(|f| f.name == name && types_match(&f.arg_types, arg_types))
    }

    /// The aggregate `name` taking exactly `arg_types` (frozen or not).
    pub fn aggregate(&self, name: &str, arg_types: &[DataType]) -> Option<&Arc<AggregateDef>> {
        self.aggregates
            .values()
            .find(|a| a.name == name && types_match(&a.arg_types, arg_types))
    }
}

/// Argument lists that name the same types (Cassandra's `typesMatch`, on `udfType`: frozen
/// or not does not matter).
pub fn types_match(a: &[DataType], b: &[DataType]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.unfrozen() == y.unfrozen())
}

impl Catalog {
    /// The function `keyspace.name` taking `arg_types`.
    pub fn function(
        &self,
        keyspace: &str,
        name: &str,
        arg_types: &[DataType],
    ) -> Option<&Arc<FunctionDef>> {
        self.keyspaces.get(keyspace)?.function(name, arg_types)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{apply_ddl, catalog_from_json};

    fn ddl(catalog: &mut Catalog, cql: &str) {
        let stmt = cql::parse_statement(cql).expect("parses");
        apply_ddl(catalog, &stmt, Some("ks"), 0).unwrap_or_else(|e| panic!("{cql}: {e}"));
    }

    #[test]
    fn functions_and_aggregates_survive_the_catalogs_json() {
        let mut c = Catalog::default();
        ddl(
            &mut c,
            "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        );
        ddl(
            &mut c,
            "CREATE FUNCTION plus(a int, b int) RETURNS NULL ON NULL INPUT RETURNS int \
             LANGUAGE lua AS 'return a + b'",
        );
        ddl(
            &mut c,
            "CREATE FUNCTION plus(a text, b text) CALLED ON NULL INPUT RETURNS text \
             LANGUAGE lua AS 'return a .. b'",
        );
        ddl(
            &mut c,
            "CREATE AGGREGATE total(int) SFUNC plus STYPE int INITCOND 0",
        );
        let json = serde_json::to_vec(&c).expect("serializes");
        let back = catalog_from_json(&json).expect("parses back");
        let ks = &back.keyspaces["ks"];
        assert_eq!(
            ks.functions.keys().collect::<Vec<_>>(),
            ["plus(int, int)", "plus(text, text)"]
        );
        let int = DataType::Native(cql::types::NativeType::Int);
        let f = ks
            .function("plus", &[int.clone(), int.clone()])
            .expect("int overload");
        assert_eq!(f.body, "return a + b");
        assert!(!f.called_on_null_input);
        let a = ks.aggregate("total", &[int]).expect("aggregate");
        assert_eq!(a.initcond.as_deref(), Some("0"));
        assert_eq!(a.state_func, "plus");
        assert_eq!(ks.functions_named("plus").count(), 2);
    }
}
