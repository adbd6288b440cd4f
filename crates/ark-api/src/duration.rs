//! Go's `time.Duration` text form, which Velero's fields (`ttl`, `execTimeout`, ...) use.

use std::time::Duration;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid duration {input:?}: {reason} (expected a Go duration such as 30s, 5m or 720h)")]
pub struct DurationError {
    pub input: String,
    pub reason: &'static str,
}

/// Parses `1h30m`, `720h0m0s`, `1.5s`, `500ms`, ... as Go's `time.ParseDuration` does, except that a
/// negative duration is refused: no field of ark's means anything with one.
pub fn parse(input: &str) -> Result<Duration, DurationError> {
    let err = |reason| DurationError {
        input: input.to_string(),
        reason,
    };
    let mut rest = input.strip_prefix('+').unwrap_or(input);
    if rest.starts_with('-') {
        return Err(err("negative durations are not allowed"));
    }
    if rest == "0" {
        return Ok(Duration::ZERO);
    }
    if rest.is_empty() {
        return Err(err("empty"));
    }
    let mut nanos: f64 = 0.0;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| err("missing unit"))?;
        if number_len == 0 {
            return Err(err("expected a number"));
        }
        let number: f64 = rest[..number_len]
            .parse()
            .map_err(|_| err("malformed number"))?;
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return Err(err("unknown unit")),
        };
        rest = &rest[unit_len..];
        nanos += number * scale;
    }
    if nanos > u64::MAX as f64 {
        return Err(err("too large"));
    }
    Ok(Duration::from_nanos(nanos.round() as u64))
}

/// A duration field of Velero's as Velero's controllers read it: absent or zero means `default`
/// (the Velero CLI writes `ttl: 0s` when no `--ttl` is given, and means "the server's default").
pub fn parse_or_default(input: Option<&str>, default: Duration) -> Result<Duration, DurationError> {
    match input.map(parse).transpose()? {
        Some(duration) if !duration.is_zero() => Ok(duration),
        _ => Ok(default),
    }
}

/// Formats as Go's `Duration.String()`: `720h0m0s`, `1m30s`, `1.5s`, `500ms`, `0s`.
pub fn format(duration: Duration) -> String {
    let nanos = duration.as_nanos();
    if nanos == 0 {
        return "0s".to_string();
    }
    if nanos < 1_000_000_000 {
        let (value, unit) = if nanos < 1_000 {
            return format!("{nanos}ns");
        } else if nanos < 1_000_000 {
            (nanos as f64 / 1e3, "µs")
        } else {
            (nanos as f64 / 1e6, "ms")
        };
        return format!("{}{unit}", trim_float(value));
    }
    let total_seconds = duration.as_secs();
    let fraction = duration.subsec_nanos();
    let hours = total_seconds / 3600;
    let minutes = (total_seconds % 3600) / 60;
    let seconds = total_seconds % 60;
    let seconds = if fraction == 0 {
        seconds.to_string()
    } else {
        trim_float(seconds as f64 + fraction as f64 / 1e9)
    };
    match (hours, minutes) {
        (0, 0) => format!("{seconds}s"),
        (0, m) => format!("{m}m{seconds}s"),
        (h, m) => format!("{h}h{m}m{seconds}s"),
    }
}

fn trim_float(value: f64) -> String {
    let text = format!("{value:.9}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_go_durations() {
        assert_eq!(parse("720h").unwrap(), Duration::from_secs(720 * 3600));
        assert_eq!(parse("720h0m0s").unwrap(), Duration::from_secs(720 * 3600));
        assert_eq!(parse("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse("0").unwrap(), Duration::ZERO);
    }

    #[test]
    fn rejects_what_go_rejects_and_negatives() {
        for bad in ["", "10", "1x", "h", "-1s", "1h-1m", "1..5s"] {
            assert!(parse(bad).is_err(), "{bad:?} should be rejected");
        }
        assert_eq!(parse("5 minutes").unwrap_err().reason, "unknown unit");
    }

    #[test]
    fn zero_or_absent_means_the_default() {
        let default = Duration::from_secs(720 * 3600);
        assert_eq!(parse_or_default(None, default), Ok(default));
        assert_eq!(parse_or_default(Some("0s"), default), Ok(default));
        assert_eq!(parse_or_default(Some("0"), default), Ok(default));
        assert_eq!(
            parse_or_default(Some("1h"), default),
            Ok(Duration::from_secs(3600))
        );
        assert!(parse_or_default(Some("1 hour"), default).is_err());
    }

    #[test]
    fn formats_like_go() {
        assert_eq!(format(Duration::from_secs(720 * 3600)), "720h0m0s");
        assert_eq!(format(Duration::from_secs(90)), "1m30s");
        assert_eq!(format(Duration::from_millis(1500)), "1.5s");
        assert_eq!(format(Duration::from_millis(500)), "500ms");
        assert_eq!(format(Duration::ZERO), "0s");
        assert_eq!(format(parse("30s").unwrap()), "30s");
    }
}
