//! Keeps `ringdb.example.toml` (every setting at its default) in step with [`Config`].
//!
//! The example lists a setting either as a key (its default value) or, for the settings that
//! are unset by default (TOML has no null), as a commented-out `# key = value` line. The tests
//! fail when a default changes, when a setting is added that the example does not list, and
//! when the example lists a setting that no longer exists.

use super::*;
use serde::de::{self, Visitor};
use std::collections::BTreeSet;

/// The example file, as the server would read it.
const EXAMPLE: &str = include_str!("../ringdb.example.toml");

/// The names of `Config`'s fields: the `FIELDS` list serde's derive hands to
/// `deserialize_struct`, caught by a deserializer that reads nothing else.
fn config_fields() -> BTreeSet<&'static str> {
    struct FieldNames<'a>(&'a mut &'static [&'static str]);

    impl<'de> de::Deserializer<'de> for FieldNames<'_> {
        type Error = de::value::Error;

        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("Config is not a struct"))
        }

        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            fields: &'static [&'static str],
            _visitor: V,
        ) -> Result<V::Value, Self::Error> {
            *self.0 = fields;
            Err(de::Error::custom("only the field names are read"))
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
            identifier ignored_any
        }
    }

    let mut fields: &'static [&'static str] = &[];
    assert!(Config::deserialize(FieldNames(&mut fields)).is_err());
    assert!(!fields.is_empty(), "no field names caught");
    fields.iter().copied().collect()
}

/// The example's commented-out settings: `(key, "key = value")` for each `# key = value` line.
fn commented_settings() -> Vec<(&'static str, String)> {
    EXAMPLE
        .lines()
        .filter_map(|line| line.trim().strip_prefix('#'))
        .filter_map(|line| line.split_once('='))
        .map(|(key, value)| (key.trim(), value.trim()))
        .filter(|(key, _)| {
            !key.is_empty()
                && key
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        })
        .map(|(key, value)| (key, format!("{key} = {value}")))
        .collect()
}

/// Every difference between two TOML tables, nested tables included, one line each.
fn table_differences(example: &toml::Table, defaults: &toml::Table, path: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (key, default) in defaults {
        let name = format!("{path}{key}");
        match (example.get(key), default) {
            (None, _) => out.push(format!("`{name}` is missing (default {default})")),
            (Some(toml::Value::Table(e)), toml::Value::Table(d)) => {
                out.extend(table_differences(e, d, &format!("{name}.")));
            }
            (Some(value), _) if value != default => {
                out.push(format!("`{name}` is {value}; the default is {default}"));
            }
            _ => {}
        }
    }
    for key in example.keys().filter(|k| !defaults.contains_key(*k)) {
        out.push(format!("`{path}{key}` is set but its default is unset"));
    }
    out
}

#[test]
fn example_config_parses_to_the_defaults() {
    let parsed: Config = toml::from_str(EXAMPLE).expect("ringdb.example.toml is a valid config");
    assert_eq!(parsed, Config::default());
    assert!(parsed.validate().is_ok());
    // The server's own path, reading the file from the repository root.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("ringdb.example.toml");
    assert_eq!(Config::load(&path).expect("loads"), Config::default());
}

#[test]
fn example_config_lists_every_setting() {
    let example: toml::Table = toml::from_str(EXAMPLE).expect("valid toml");
    let defaults = toml::Table::try_from(Config::default()).expect("defaults serialise");
    let differences = table_differences(&example, &defaults, "");
    assert!(
        differences.is_empty(),
        "ringdb.example.toml disagrees with Config::default():\n{}",
        differences.join("\n")
    );

    // The settings unset by default appear as `# key = value` lines, with a value that parses.
    let commented = commented_settings();
    for (key, line) in &commented {
        assert!(
            !defaults.contains_key(*key),
            "`{key}` has a default; write it as `{key} = <default>`, not commented out"
        );
        let parsed: Config =
            toml::from_str(line).unwrap_or_else(|e| panic!("`{line}` in ringdb.example.toml: {e}"));
        assert_ne!(parsed, Config::default(), "`{line}` sets nothing");
    }

    let listed: BTreeSet<&str> = example
        .keys()
        .map(String::as_str)
        .chain(commented.iter().map(|(key, _)| *key))
        .collect();
    let fields = config_fields();
    let missing: Vec<_> = fields.difference(&listed).collect();
    assert!(
        missing.is_empty(),
        "settings missing from ringdb.example.toml (add each with its default and a comment, \
         commented out if it is unset by default): {missing:?}"
    );
    let unknown: Vec<_> = listed.difference(&fields).collect();
    assert!(unknown.is_empty(), "no such settings: {unknown:?}");
}
