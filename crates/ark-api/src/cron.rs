//! A Schedule's `spec.schedule`, read as Velero reads it (robfig/cron v3's `ParseStandard`):
//! five fields (minute, hour, day of month, month, day of week) with `*`, `?`, ranges, lists,
//! steps and month and day names; the descriptors `@yearly`, `@annually`, `@monthly`, `@weekly`,
//! `@daily`, `@midnight` and `@hourly`; `@every <Go duration>`; and a `CRON_TZ=<zone> ` or
//! `TZ=<zone> ` prefix. Without one, times are UTC (Velero's server runs in UTC).
//!
//! The next run is found as robfig finds it, so that ark and Velero run a schedule at the same
//! times, across daylight-saving changes too.

use std::ops::Range;
use std::time::Duration;

use jiff::civil::date;
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp, ToSpan, Zoned};

/// Why an expression is not a schedule, and which part of it is at fault.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct CronError {
    /// Velero's words: "invalid schedule: ...", or its message for an empty expression.
    pub message: String,
    /// The bytes of the expression at fault.
    pub at: Range<usize>,
}

impl CronError {
    fn new(message: impl std::fmt::Display, at: Range<usize>) -> Self {
        CronError {
            message: format!("invalid schedule: {message}"),
            at,
        }
    }

    /// The expression, and a caret under the part at fault, for a person to read.
    pub fn pointing_into(&self, expression: &str) -> String {
        let start = expression[..self.at.start.min(expression.len())]
            .chars()
            .count();
        let width = expression
            .get(self.at.clone())
            .map_or(1, |part| part.chars().count().max(1));
        format!(
            "  {expression}\n  {}{}",
            " ".repeat(start),
            "^".repeat(width)
        )
    }
}

/// A parsed schedule.
#[derive(Clone, Debug)]
pub struct Cron {
    zone: TimeZone,
    zone_name: Option<String>,
    runs: Runs,
}

#[derive(Clone, Debug, PartialEq)]
enum Runs {
    /// `@every`: a constant delay, in whole seconds, at least one.
    Every(Duration),
    Fields(Fields),
}

/// Each field as a bit set, with robfig's star bit for the day fields.
#[derive(Clone, Debug, PartialEq)]
struct Fields {
    minute: u64,
    hour: u64,
    day_of_month: u64,
    month: u64,
    day_of_week: u64,
}

const STAR: u64 = 1 << 63;

struct Bounds {
    name: &'static str,
    min: u32,
    max: u32,
    names: &'static [&'static str],
}

const MINUTE: Bounds = Bounds {
    name: "minute",
    min: 0,
    max: 59,
    names: &[],
};
const HOUR: Bounds = Bounds {
    name: "hour",
    min: 0,
    max: 23,
    names: &[],
};
const DAY_OF_MONTH: Bounds = Bounds {
    name: "day of month",
    min: 1,
    max: 31,
    names: &[],
};
const MONTH: Bounds = Bounds {
    name: "month",
    min: 1,
    max: 12,
    names: &[
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ],
};
const DAY_OF_WEEK: Bounds = Bounds {
    name: "day of week",
    min: 0,
    max: 6,
    names: &["sun", "mon", "tue", "wed", "thu", "fri", "sat"],
};

impl Cron {
    pub fn parse(expression: &str) -> Result<Cron, CronError> {
        if expression.trim().is_empty() {
            return Err(CronError {
                message: "Schedule must be a non-empty valid Cron expression".into(),
                at: 0..expression.len(),
            });
        }
        let mut rest = expression;
        let mut offset = 0;
        let mut zone = TimeZone::UTC;
        let mut zone_name = None;
        if let Some(prefix) = ["CRON_TZ=", "TZ="].iter().find(|p| rest.starts_with(**p)) {
            let end = rest.find(' ').unwrap_or(rest.len());
            let name = &rest[prefix.len()..end];
            zone = TimeZone::get(name).map_err(|_| {
                CronError::new(
                    format!("provided bad location {name}: unknown time zone {name}"),
                    prefix.len()..end,
                )
            })?;
            zone_name = Some(name.to_string());
            offset = end;
            rest = &rest[end..];
        }
        let trimmed = rest.trim_start();
        offset += rest.len() - trimmed.len();
        let rest = trimmed.trim_end();
        let runs = if let Some(descriptor) = rest.strip_prefix('@') {
            descriptor_runs(descriptor, offset)?
        } else {
            Runs::Fields(fields(rest, offset)?)
        };
        Ok(Cron {
            zone,
            zone_name,
            runs,
        })
    }

    /// The zone its times are in: the prefix's, or UTC.
    pub fn zone(&self) -> &TimeZone {
        &self.zone
    }

    /// The zone's name as the prefix gave it, if one did.
    pub fn zone_name(&self) -> Option<&str> {
        self.zone_name.as_deref()
    }

    /// The first run strictly after `after`; None if there is none within five years (`30 2 31 2
    /// *`: the 31st of February).
    pub fn next(&self, after: Timestamp) -> Option<Timestamp> {
        match &self.runs {
            // robfig: the time rounded down to its second, plus the delay.
            Runs::Every(delay) => {
                let whole = Timestamp::from_second(after.as_second()).ok()?;
                whole
                    .checked_add(SignedDuration::try_from(*delay).ok()?)
                    .ok()
            }
            Runs::Fields(fields) => fields.next(after.to_zoned(self.zone.clone())),
        }
    }
}

fn descriptor_runs(descriptor: &str, offset: usize) -> Result<Runs, CronError> {
    let at = offset..offset + descriptor.len() + 1;
    let standard = match descriptor {
        "yearly" | "annually" => "0 0 1 1 *",
        "monthly" => "0 0 1 * *",
        "weekly" => "0 0 * * 0",
        "daily" | "midnight" => "0 0 * * *",
        "hourly" => "0 * * * *",
        _ => {
            let Some(every) = descriptor.strip_prefix("every ") else {
                return Err(CronError::new(
                    format!("unrecognized descriptor: @{descriptor}"),
                    at,
                ));
            };
            let delay = crate::duration::parse(every.trim()).map_err(|e| {
                CronError::new(format!("failed to parse duration @{descriptor}: {e}"), at)
            })?;
            // robfig: whole seconds, and at least one.
            let delay = Duration::from_secs(delay.as_secs().max(1));
            return Ok(Runs::Every(delay));
        }
    };
    Ok(Runs::Fields(
        fields(standard, 0).expect("the descriptors are valid"),
    ))
}

fn fields(text: &str, offset: usize) -> Result<Fields, CronError> {
    let mut parts = Vec::new();
    let mut at = 0;
    for part in text.split_ascii_whitespace() {
        let start = at + text[at..].find(part).unwrap_or(0);
        at = start + part.len();
        parts.push((part, offset + start..offset + at));
    }
    if parts.len() != 5 {
        return Err(CronError::new(
            format!(
                "expected exactly 5 fields, found {}: [{}]",
                parts.len(),
                parts.iter().map(|(p, _)| *p).collect::<Vec<_>>().join(" ")
            ),
            offset..offset + text.len(),
        ));
    }
    let field = |i: usize, bounds: &Bounds| {
        let (part, at) = &parts[i];
        field(part, at.start, bounds)
    };
    Ok(Fields {
        minute: field(0, &MINUTE)?,
        hour: field(1, &HOUR)?,
        day_of_month: field(2, &DAY_OF_MONTH)?,
        month: field(3, &MONTH)?,
        day_of_week: field(4, &DAY_OF_WEEK)?,
    })
}

/// One field: comma-separated ranges, each `*`, `?`, `a`, `a-b`, with an optional `/step`.
fn field(text: &str, offset: usize, bounds: &Bounds) -> Result<u64, CronError> {
    let mut bits = 0;
    let mut at = offset;
    for range in text.split(',') {
        bits |= range_bits(range, at..at + range.len(), bounds)?;
        at += range.len() + 1;
    }
    Ok(bits)
}

fn range_bits(text: &str, at: Range<usize>, bounds: &Bounds) -> Result<u64, CronError> {
    let error = |message: String| CronError::new(format!("{}: {message}", bounds.name), at.clone());
    let mut slash = text.split('/');
    let expr = slash.next().unwrap_or_default();
    let step = slash.next();
    if slash.next().is_some() {
        return Err(error(format!("too many slashes: {text}")));
    }
    let (mut start, mut end, mut star) = (bounds.min, bounds.max, false);
    if expr == "*" || expr == "?" {
        star = true;
    } else {
        let mut hyphen = expr.split('-');
        start = value(hyphen.next().unwrap_or_default(), bounds).map_err(&error)?;
        end = match hyphen.next() {
            Some(end) => value(end, bounds).map_err(&error)?,
            None => start,
        };
        if hyphen.next().is_some() {
            return Err(error(format!("too many hyphens: {expr}")));
        }
    }
    let step = match step {
        None => 1,
        Some(step) => {
            let step: u32 = number(step).map_err(&error)?;
            if step == 0 {
                return Err(error("step of range should be a positive number".into()));
            }
            // `5/10` means 5 to the maximum, by tens.
            if !star && !expr.contains('-') {
                end = bounds.max;
            }
            if step > 1 {
                star = false;
            }
            step
        }
    };
    if start < bounds.min {
        return Err(error(format!(
            "beginning of range ({start}) below minimum ({}): {text}",
            bounds.min
        )));
    }
    if end > bounds.max {
        return Err(error(format!(
            "end of range ({end}) above maximum ({}): {text}",
            bounds.max
        )));
    }
    if start > end {
        return Err(error(format!(
            "beginning of range ({start}) beyond end of range ({end}): {text}"
        )));
    }
    let mut bits = if star { STAR } else { 0 };
    let mut n = start;
    while n <= end {
        bits |= 1 << n;
        n += step;
    }
    Ok(bits)
}

fn value(text: &str, bounds: &Bounds) -> Result<u32, String> {
    let lower = text.to_ascii_lowercase();
    if let Some(i) = bounds.names.iter().position(|n| *n == lower) {
        return Ok(i as u32 + bounds.min);
    }
    number(text)
}

fn number(text: &str) -> Result<u32, String> {
    match text.parse::<i64>() {
        Ok(n) if n < 0 => Err(format!("negative number ({n}) not allowed: {text}")),
        Ok(n) => u32::try_from(n).map_err(|_| format!("number too large: {text}")),
        Err(_) => Err(format!("failed to parse int from {text}")),
    }
}

fn has(bits: u64, n: i8) -> bool {
    bits & (1 << n) != 0
}

impl Fields {
    fn day_matches(&self, t: &Zoned) -> bool {
        let dom = has(self.day_of_month, t.day());
        let dow = has(self.day_of_week, t.weekday().to_sunday_zero_offset());
        // robfig: when either day field is a star, both must match; otherwise either may.
        if self.day_of_month & STAR != 0 || self.day_of_week & STAR != 0 {
            dom && dow
        } else {
            dom || dow
        }
    }

    /// robfig's `SpecSchedule.Next`, step for step: a calendar walk in the schedule's zone, a
    /// month, a day, an hour, a minute at a time, from the next whole second.
    fn next(&self, from: Zoned) -> Option<Timestamp> {
        let zone = from.time_zone().clone();
        let at = |y: i16, m: i8, d: i8, h: i8| date(y, m, d).at(h, 0, 0, 0).to_zoned(zone.clone());
        let mut t = from
            .checked_add(
                SignedDuration::from_secs(1)
                    - SignedDuration::from_nanos(from.subsec_nanosecond().into()),
            )
            .ok()?;
        let mut added = false;
        let year_limit = t.year() + 5;
        'wrap: loop {
            if t.year() > year_limit {
                return None;
            }
            while !has(self.month, t.month()) {
                if !added {
                    added = true;
                    t = at(t.year(), t.month(), 1, 0).ok()?;
                }
                t = t.checked_add(1.month()).ok()?;
                if t.month() == 1 {
                    continue 'wrap;
                }
            }
            while !self.day_matches(&t) {
                if !added {
                    added = true;
                    t = at(t.year(), t.month(), t.day(), 0).ok()?;
                }
                t = t.checked_add(1.day()).ok()?;
                // A day that began at a daylight-saving change: back to its midnight.
                let hour = i64::from(t.hour());
                if hour != 0 {
                    let shift = if hour > 12 { 24 - hour } else { -hour };
                    t = t.checked_add(SignedDuration::from_hours(shift)).ok()?;
                }
                if t.day() == 1 {
                    continue 'wrap;
                }
            }
            while !has(self.hour, t.hour()) {
                if !added {
                    added = true;
                    t = at(t.year(), t.month(), t.day(), t.hour()).ok()?;
                }
                t = t.checked_add(SignedDuration::from_hours(1)).ok()?;
                if t.hour() == 0 {
                    continue 'wrap;
                }
            }
            while !has(self.minute, t.minute()) {
                if !added {
                    added = true;
                    t = t
                        .checked_sub(SignedDuration::from_secs(t.second().into()))
                        .ok()?;
                }
                t = t.checked_add(SignedDuration::from_mins(1)).ok()?;
                if t.minute() == 0 {
                    continue 'wrap;
                }
            }
            // The standard parser's seconds field is 0: on to the next minute, and check again.
            if t.second() != 0 {
                t = t
                    .checked_add(SignedDuration::from_secs(60 - i64::from(t.second())))
                    .ok()?;
                continue 'wrap;
            }
            return Some(t.timestamp());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn next(expression: &str, after: &str) -> Option<String> {
        let after: Timestamp = after.parse().unwrap();
        Cron::parse(expression)
            .unwrap()
            .next(after)
            .map(|t| t.to_string())
    }

    #[test]
    fn runs_fall_on_the_fields_and_the_descriptors() {
        assert_eq!(
            next("0 0 * * *", "2012-07-09T14:45:00Z").as_deref(),
            Some("2012-07-10T00:00:00Z")
        );
        assert_eq!(
            next("*/5 * * * *", "2012-07-09T14:45:00Z").as_deref(),
            Some("2012-07-09T14:50:00Z")
        );
        assert_eq!(
            next("@weekly", "2012-07-09T14:45:00Z").as_deref(),
            Some("2012-07-15T00:00:00Z")
        );
        // Day of month or day of week when both are restricted: the 1st, or a Monday.
        assert_eq!(
            next("0 0 1 * mon", "2012-07-14T00:00:00Z").as_deref(),
            Some("2012-07-16T00:00:00Z")
        );
        assert_eq!(next("30 2 31 2 *", "2012-01-01T00:00:00Z"), None);
        assert_eq!(
            next("@every 1m30s", "2012-01-01T00:00:00.7Z").as_deref(),
            Some("2012-01-01T00:01:30Z")
        );
        assert_eq!(
            next("CRON_TZ=Europe/Paris 0 3 * * *", "2024-06-01T00:00:00Z").as_deref(),
            Some("2024-06-01T01:00:00Z")
        );
    }

    #[test]
    fn a_bad_expression_says_why_in_velero_s_words_and_where() {
        let error = Cron::parse("").unwrap_err();
        assert_eq!(
            error.message,
            "Schedule must be a non-empty valid Cron expression"
        );
        let expression = "0 25 * * *";
        let error = Cron::parse(expression).unwrap_err();
        assert_eq!(
            error.message,
            "invalid schedule: hour: end of range (25) above maximum (23): 25"
        );
        assert_eq!(error.pointing_into(expression), "  0 25 * * *\n    ^^");
        let expression = "TZ=Mars/Olympus 0 3 * * *";
        let error = Cron::parse(expression).unwrap_err();
        assert_eq!(
            error.pointing_into(expression),
            "  TZ=Mars/Olympus 0 3 * * *\n     ^^^^^^^^^^^^"
        );
        assert!(
            Cron::parse("* * * *")
                .unwrap_err()
                .message
                .contains("expected exactly 5 fields, found 4")
        );
        assert!(
            Cron::parse("@fortnightly")
                .unwrap_err()
                .message
                .contains("unrecognized descriptor: @fortnightly")
        );
        assert!(Cron::parse("*/0 * * * *").is_err());
        assert!(Cron::parse("1-2-3 * * * *").is_err());
        assert!(Cron::parse("* * * * 7").is_err());
    }
}
