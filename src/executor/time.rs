//! Cassandra's textual date, time and timestamp literals.

use crate::error::QueryError;

/// Days from 1970-01-01 to the civil date (proleptic Gregorian; Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of a day count from 1970-01-01.
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn parse_ymd(s: &str) -> Option<i64> {
    let (sign, rest) = match s.strip_prefix('-') {
        Some(r) => (-1, r),
        None => (1, s.strip_prefix('+').unwrap_or(s)),
    };
    let mut parts = rest.splitn(3, '-');
    let y: i64 = parts.next()?.parse().ok()?;
    let m: u32 = parts.next()?.parse().ok()?;
    let d: u32 = parts.next()?.parse().ok()?;
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    let days = days_from_civil(sign * y, m, d);
    // Reject dates such as 2021-02-30 that roll over.
    (civil_from_days(days) == (sign * y, m, d)).then_some(days)
}

/// `hh:mm[:ss[.fffffffff]]` as nanoseconds since midnight.
fn parse_hms(s: &str) -> Option<i64> {
    let (hms, frac) = match s.find('.') {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let mut parts = hms.split(':');
    let h: i64 = parts.next()?.parse().ok()?;
    let m: i64 = parts.next()?.parse().ok()?;
    let sec: i64 = match parts.next() {
        Some(p) => p.parse().ok()?,
        None => 0,
    };
    if parts.next().is_some()
        || !(0..24).contains(&h)
        || !(0..60).contains(&m)
        || !(0..60).contains(&sec)
    {
        return None;
    }
    let mut nanos = 0i64;
    if let Some(f) = frac {
        if f.is_empty() || f.len() > 9 || !f.chars().all(|c| c.is_ascii_digit()) {
            return None;
        }
        nanos = f.parse::<i64>().ok()? * 10i64.pow(9 - f.len() as u32);
    }
    Some(((h * 60 + m) * 60 + sec) * 1_000_000_000 + nanos)
}

/// A `date` literal: `yyyy-mm-dd`, or a day count.
///
/// # Errors
/// InvalidRequest naming the text.
pub fn parse_date(s: &str) -> Result<u32, QueryError> {
    let days = parse_ymd(s.trim()).ok_or_else(|| {
        QueryError::invalid(format!("Unable to coerce '{s}' to a formatted date (long)"))
    })?;
    u32::try_from(days + (1i64 << 31)).map_err(|_| {
        QueryError::invalid(format!("Unable to coerce '{s}' to a formatted date (long)"))
    })
}

/// A `time` literal `hh:mm:ss[.fffffffff]` as nanoseconds since midnight.
///
/// # Errors
/// InvalidRequest naming the text.
pub fn parse_time(s: &str) -> Result<i64, QueryError> {
    parse_hms(s.trim()).ok_or_else(|| {
        QueryError::invalid(format!("Unable to coerce '{s}' to a formatted time (long)"))
    })
}

/// A `timestamp` literal: `yyyy-mm-dd[( |T)hh:mm[:ss[.fff]]][Z|(+|-)hh[:]mm]`, or milliseconds.
///
/// # Errors
/// InvalidRequest naming the text.
pub fn parse_timestamp(s: &str) -> Result<i64, QueryError> {
    let bad = || QueryError::invalid(format!("Unable to parse a date/time from '{s}'"));
    let t = s.trim();
    if let Ok(ms) = t.parse::<i64>() {
        return Ok(ms);
    }
    // Split off the zone.
    let (body, offset_minutes) =
        if let Some(b) = t.strip_suffix('Z').or_else(|| t.strip_suffix('z')) {
            (b, 0)
        } else {
            let date_len = t.find([' ', 'T']).unwrap_or(t.len());
            match t[date_len..].rfind(['+', '-']) {
                Some(i) => {
                    let zone = &t[date_len + i + 1..];
                    let sign = if t.as_bytes()[date_len + i] == b'-' {
                        -1
                    } else {
                        1
                    };
                    let digits: String = zone.chars().filter(|c| *c != ':').collect();
                    if digits.len() != 4 && digits.len() != 2 {
                        return Err(bad());
                    }
                    let hh: i64 = digits[..2].parse().map_err(|_| bad())?;
                    let mm: i64 = if digits.len() == 4 {
                        digits[2..].parse().map_err(|_| bad())?
                    } else {
                        0
                    };
                    (t[..date_len + i].trim_end(), sign * (hh * 60 + mm))
                }
                None => (t, 0),
            }
        };
    let (date, time) = match body.find([' ', 'T']) {
        Some(i) => (&body[..i], Some(body[i + 1..].trim())),
        None => (body, None),
    };
    let days = parse_ymd(date).ok_or_else(bad)?;
    let nanos = match time {
        Some(tm) => parse_hms(tm).ok_or_else(bad)?,
        None => 0,
    };
    Ok(days * 86_400_000 + nanos / 1_000_000 - offset_minutes * 60_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_parse_in_cassandra_formats() {
        assert_eq!(parse_timestamp("1970-01-01").ok(), Some(0));
        assert_eq!(
            parse_timestamp("2011-02-03 04:05:00+0000").ok(),
            Some(1_296_705_900_000)
        );
        assert_eq!(
            parse_timestamp("2011-02-03T04:05:00.123Z").ok(),
            Some(1_296_705_900_123)
        );
        assert_eq!(
            parse_timestamp("2011-02-03 05:05+01:00").ok(),
            Some(1_296_705_900_000)
        );
        assert!(parse_timestamp("2011-02-30").is_err());
    }

    #[test]
    fn dates_and_times_parse() {
        assert_eq!(parse_date("1970-01-01").ok(), Some(1 << 31));
        assert_eq!(parse_time("00:00:01.5").ok(), Some(1_500_000_000));
        assert!(parse_time("24:00:00").is_err());
    }
}
