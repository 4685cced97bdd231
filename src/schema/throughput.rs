//! Provisioned throughput, as Azure Cosmos DB for Apache Cassandra sets it: the
//! `cosmosdb_provisioned_throughput` and `cosmosdb_autoscale_max_throughput` options of CREATE /
//! ALTER TABLE and KEYSPACE (and the CREATE TABLE custom payload key of the same name), in
//! request units per second. A table or keyspace without one is unlimited.

use crate::error::QueryError;
use cql::ast::OptionValue;
use serde::{Deserialize, Serialize};

/// The manual option.
pub const PROVISIONED: &str = "cosmosdb_provisioned_throughput";
/// The autoscale option.
pub const AUTOSCALE_MAX: &str = "cosmosdb_autoscale_max_throughput";
/// Cosmos DB's least manual throughput.
pub const MIN_MANUAL: u32 = 400;
/// Cosmos DB's least autoscale maximum.
pub const MIN_AUTOSCALE_MAX: u32 = 1000;

/// A table's or keyspace's throughput.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Throughput {
    /// A fixed number of RU/s.
    Manual(u32),
    /// Scales between a tenth of `max` and `max` RU/s with the load: requests are refused only
    /// past `max`.
    Autoscale {
        /// The most RU/s it scales to.
        max: u32,
    },
}

impl Throughput {
    /// The most RU/s requests may use.
    pub fn limit(&self) -> u32 {
        match self {
            Throughput::Manual(n) => *n,
            Throughput::Autoscale { max } => *max,
        }
    }

    /// The option and value that set it, as DESCRIBE and `system_schema` show them.
    pub fn option(&self) -> (&'static str, u32) {
        match self {
            Throughput::Manual(n) => (PROVISIONED, *n),
            Throughput::Autoscale { max } => (AUTOSCALE_MAX, *max),
        }
    }

    /// Whether `name` (lower case) is one of the throughput options.
    pub fn is_option(name: &str) -> bool {
        name == PROVISIONED || name == AUTOSCALE_MAX
    }

    /// The throughput set by option `name` (one of [`Throughput::is_option`]) to `value`.
    ///
    /// # Errors
    /// InvalidRequest for a value that is not a whole number or is under Cosmos DB's minimum.
    pub fn from_option(name: &str, value: &OptionValue) -> Result<Throughput, QueryError> {
        let text = match value {
            OptionValue::String(s) | OptionValue::Constant(s) | OptionValue::Identifier(s) => {
                s.trim()
            }
            OptionValue::Map(_) => "",
        };
        Throughput::from_text(name, text)
    }

    /// As [`Throughput::from_option`], from the value's text (the custom payload's decimal
    /// string).
    ///
    /// # Errors
    /// As [`Throughput::from_option`].
    pub fn from_text(name: &str, text: &str) -> Result<Throughput, QueryError> {
        let n: u32 = text.parse().map_err(|_| {
            QueryError::invalid(format!(
                "Invalid value for property '{name}': '{text}' is not a number of RU/s"
            ))
        })?;
        if name == AUTOSCALE_MAX {
            if n < MIN_AUTOSCALE_MAX {
                return Err(QueryError::invalid(format!(
                    "{AUTOSCALE_MAX} must be at least {MIN_AUTOSCALE_MAX} RU/s (got {n})"
                )));
            }
            return Ok(Throughput::Autoscale { max: n });
        }
        if n < MIN_MANUAL {
            return Err(QueryError::invalid(format!(
                "{PROVISIONED} must be at least {MIN_MANUAL} RU/s (got {n})"
            )));
        }
        Ok(Throughput::Manual(n))
    }

    /// The throughput a list of `WITH` properties sets, if any (the last one wins, as the
    /// properties were checked for duplicates before).
    ///
    /// # Errors
    /// As [`Throughput::from_option`], and both options at once.
    pub fn in_properties(
        properties: &[(String, OptionValue)],
    ) -> Result<Option<Throughput>, QueryError> {
        let set: Vec<(String, &OptionValue)> = properties
            .iter()
            .map(|(n, v)| (n.to_ascii_lowercase(), v))
            .filter(|(n, _)| Throughput::is_option(n))
            .collect();
        if set.len() > 1 {
            return Err(QueryError::invalid(format!(
                "{PROVISIONED} and {AUTOSCALE_MAX} cannot both be set"
            )));
        }
        set.first()
            .map(|(n, v)| Throughput::from_option(n, v))
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(s: &str) -> OptionValue {
        OptionValue::Constant(s.into())
    }

    #[test]
    fn options_take_cosmos_minimums() {
        assert_eq!(
            Throughput::from_option(PROVISIONED, &value("400")).unwrap(),
            Throughput::Manual(400)
        );
        assert!(Throughput::from_option(PROVISIONED, &value("399")).is_err());
        assert!(Throughput::from_option(PROVISIONED, &value("4e3")).is_err());
        let auto = Throughput::from_option(AUTOSCALE_MAX, &value("4000")).unwrap();
        assert_eq!(auto, Throughput::Autoscale { max: 4000 });
        assert_eq!(auto.limit(), 4000);
        assert!(Throughput::from_option(AUTOSCALE_MAX, &value("999")).is_err());
        let both = [
            (PROVISIONED.to_string(), value("400")),
            (AUTOSCALE_MAX.to_string(), value("4000")),
        ];
        assert!(Throughput::in_properties(&both).is_err());
        assert_eq!(Throughput::in_properties(&both[1..]).unwrap(), Some(auto));
        assert_eq!(Throughput::in_properties(&[]).unwrap(), None);
    }
}
