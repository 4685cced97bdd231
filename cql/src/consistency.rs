//! `[consistency]` levels (`native_protocol_v4.spec` §3), shared by the requests that carry one,
//! the error bodies that name one and the wire primitives that read and write one.

use std::fmt;

/// A consistency level as sent in QUERY/EXECUTE/BATCH and in error bodies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u16)]
pub enum Consistency {
    /// `ANY` (writes only).
    Any = 0x0000,
    /// `ONE`.
    One = 0x0001,
    /// `TWO`.
    Two = 0x0002,
    /// `THREE`.
    Three = 0x0003,
    /// `QUORUM`.
    Quorum = 0x0004,
    /// `ALL`.
    All = 0x0005,
    /// `LOCAL_QUORUM`.
    LocalQuorum = 0x0006,
    /// `EACH_QUORUM`.
    EachQuorum = 0x0007,
    /// `SERIAL`.
    Serial = 0x0008,
    /// `LOCAL_SERIAL`.
    LocalSerial = 0x0009,
    /// `LOCAL_ONE`.
    LocalOne = 0x000A,
}

impl Consistency {
    /// Every level, in code order.
    pub const ALL_LEVELS: [Consistency; 11] = [
        Consistency::Any,
        Consistency::One,
        Consistency::Two,
        Consistency::Three,
        Consistency::Quorum,
        Consistency::All,
        Consistency::LocalQuorum,
        Consistency::EachQuorum,
        Consistency::Serial,
        Consistency::LocalSerial,
        Consistency::LocalOne,
    ];

    /// The level with wire code `code`, if any.
    pub fn from_u16(code: u16) -> Option<Consistency> {
        Consistency::ALL_LEVELS.get(usize::from(code)).copied()
    }

    /// Cassandra's upper-case name (`"ONE"`, `"LOCAL_QUORUM"`, …).
    pub fn name(self) -> &'static str {
        match self {
            Consistency::Any => "ANY",
            Consistency::One => "ONE",
            Consistency::Two => "TWO",
            Consistency::Three => "THREE",
            Consistency::Quorum => "QUORUM",
            Consistency::All => "ALL",
            Consistency::LocalQuorum => "LOCAL_QUORUM",
            Consistency::EachQuorum => "EACH_QUORUM",
            Consistency::Serial => "SERIAL",
            Consistency::LocalSerial => "LOCAL_SERIAL",
            Consistency::LocalOne => "LOCAL_ONE",
        }
    }

    /// Looks a level up by name, case-insensitively.
    pub fn from_name(name: &str) -> Option<Consistency> {
        Consistency::ALL_LEVELS
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(name))
    }

    /// True for `SERIAL` and `LOCAL_SERIAL`.
    pub fn is_serial(self) -> bool {
        matches!(self, Consistency::Serial | Consistency::LocalSerial)
    }
}

impl fmt::Display for Consistency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_names_round_trip() {
        for c in Consistency::ALL_LEVELS {
            assert_eq!(Consistency::from_u16(c as u16), Some(c));
            assert_eq!(Consistency::from_name(&c.name().to_lowercase()), Some(c));
        }
        assert_eq!(Consistency::from_u16(0x0B), None);
        assert_eq!(Consistency::LocalOne.to_string(), "LOCAL_ONE");
    }
}
