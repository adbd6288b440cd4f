//! Printing objects as a table, JSON or YAML.

use std::io::Write;

use anyhow::Context as _;
use comfy_table::{ContentArrangement, Table, presets};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use serde::Serialize;

use crate::cli::args::OutputFormat;

/// A kubectl-style table: no borders, upper-case headers, columns two spaces apart.
pub fn table<I, R>(headers: &[&str], rows: I) -> String
where
    I: IntoIterator<Item = R>,
    R: IntoIterator<Item = String>,
{
    let mut table = Table::new();
    table
        .load_style(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(headers.iter().copied());
    for row in rows {
        table.add_row(row);
    }
    for column in table.column_iter_mut() {
        column.set_padding((0, 2));
    }
    let text = table.to_string();
    text.lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Writes `items` in the chosen machine-readable format: the object itself when the user named just one,
/// otherwise a `List` as kubectl prints it. `Table` is the caller's business.
pub fn print_objects<T: Serialize>(
    format: OutputFormat,
    items: &[T],
    single: bool,
) -> anyhow::Result<()> {
    let mut value = if single && items.len() == 1 {
        serde_json::to_value(&items[0])?
    } else {
        serde_json::json!({ "apiVersion": "v1", "kind": "List", "items": items })
    };
    // As kubectl prints objects: without the API server's field-ownership bookkeeping.
    let objects = match value
        .get_mut("items")
        .and_then(|items| items.as_array_mut())
    {
        Some(items) => items.iter_mut().collect(),
        None => vec![&mut value],
    };
    for object in objects {
        if let Some(metadata) = object.get_mut("metadata").and_then(|m| m.as_object_mut()) {
            metadata.remove("managedFields");
        }
    }
    let mut out = std::io::stdout().lock();
    match format {
        OutputFormat::Json => {
            serde_json::to_writer_pretty(&mut out, &value)?;
            writeln!(out)?;
        }
        OutputFormat::Yaml => {
            let text = serde_saphyr::to_string(&value).context("cannot write YAML")?;
            write!(out, "{text}")?;
        }
        OutputFormat::Table => unreachable!("tables are printed by each command"),
    }
    Ok(())
}

/// A timestamp as users read it, or `<none>`.
pub fn time(time: Option<&Time>) -> String {
    time.map_or_else(
        || "<none>".to_string(),
        |t| t.0.strftime("%Y-%m-%d %H:%M:%S +0000 UTC").to_string(),
    )
}

/// The columns every `get` table ends with, as kubectl prints them: `AGE`, then `LABELS` with
/// `--show-labels`. `now` is given, so that tables are a function of their input.
#[derive(Clone, Copy, Debug)]
pub struct ObjectColumns {
    pub now: Timestamp,
    pub show_labels: bool,
}

impl ObjectColumns {
    /// The trailing columns as of this moment.
    pub fn now(show_labels: bool) -> ObjectColumns {
        ObjectColumns {
            now: Timestamp::now(),
            show_labels,
        }
    }

    /// `headers`, then the trailing columns' headers.
    pub fn headers<'a>(&self, headers: &[&'a str]) -> Vec<&'a str> {
        let mut all = headers.to_vec();
        all.push("AGE");
        if self.show_labels {
            all.push("LABELS");
        }
        all
    }

    /// `row`, then the object's age and (with `--show-labels`) its labels.
    pub fn row(&self, metadata: &ObjectMeta, mut row: Vec<String>) -> Vec<String> {
        row.push(age(metadata.creation_timestamp.as_ref(), self.now));
        if self.show_labels {
            row.push(labels(metadata.labels.as_ref()));
        }
        row
    }
}

/// How long ago `then` was, as kubectl's AGE column says it; `<none>` without a time.
pub fn age(then: Option<&Time>, now: Timestamp) -> String {
    then.map_or_else(
        || "<none>".to_string(),
        |then| {
            // Go's `time.Since` saturates at the bounds of a `time.Duration` (int64 nanoseconds).
            let nanos = now.as_nanosecond() - then.0.as_nanosecond();
            human_duration(nanos.clamp(i64::MIN.into(), i64::MAX.into()) as i64)
        },
    )
}

/// kubectl's `duration.HumanDuration` (k8s.io/apimachinery/pkg/util/duration), rule for rule:
/// about two or three significant figures of a Go `time.Duration` of `nanos` nanoseconds. Up to a
/// second in the future counts as now (clocks differ); more is `<invalid>`.
fn human_duration(nanos: i64) -> String {
    const SECOND: i64 = 1_000_000_000;
    const MINUTE: i64 = 60 * SECOND;
    const HOUR: i64 = 60 * MINUTE;
    // Integer division truncates toward zero, as Go's `int(d.Seconds())` and `d / time.Minute` do.
    let seconds = nanos / SECOND;
    if seconds < -1 {
        return "<invalid>".into();
    } else if seconds < 0 {
        return "0s".into();
    } else if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = nanos / MINUTE;
    if minutes < 10 {
        return match seconds % 60 {
            0 => format!("{minutes}m"),
            s => format!("{minutes}m{s}s"),
        };
    } else if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = nanos / HOUR;
    if hours < 8 {
        match minutes % 60 {
            0 => format!("{hours}h"),
            m => format!("{hours}h{m}m"),
        }
    } else if hours < 48 {
        format!("{hours}h")
    } else if hours < 24 * 8 {
        match hours % 24 {
            0 => format!("{}d", hours / 24),
            h => format!("{}d{h}h", hours / 24),
        }
    } else if hours < 24 * 365 * 2 {
        format!("{}d", hours / 24)
    } else if hours < 24 * 365 * 8 {
        match (hours / 24) % 365 {
            0 => format!("{}y", hours / 24 / 365),
            d => format!("{}y{d}d", hours / 24 / 365),
        }
    } else {
        format!("{}y", hours / 24 / 365)
    }
}

/// Labels as kubectl's `--show-labels` prints them: `k=v,k2=v2` by key, or `<none>`.
pub fn labels(labels: Option<&std::collections::BTreeMap<String, String>>) -> String {
    match labels {
        Some(labels) if !labels.is_empty() => labels
            .iter()
            .map(|(key, value)| format!("{key}={value}"))
            .collect::<Vec<_>>()
            .join(","),
        _ => "<none>".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_aligned_without_borders() {
        let text = table(
            &["NAME", "STATUS"],
            [
                vec!["nightly".to_string(), "Completed".to_string()],
                vec!["a".to_string(), "New".to_string()],
            ],
        );
        insta::assert_snapshot!(text, @r"
        NAME     STATUS
        nightly  Completed
        a        New
        ");
    }

    /// Go's `time.Duration` units, in nanoseconds.
    const S: i64 = 1_000_000_000;
    const M: i64 = 60 * S;
    const H: i64 = 60 * M;
    const D: i64 = 24 * H;
    const Y: i64 = 365 * D;

    #[test]
    fn human_durations_follow_kubectl_at_every_boundary() {
        let cases = [
            // Up to a second in the future is now; further is invalid.
            (i64::MIN, "<invalid>"),
            (-2 * S, "<invalid>"),
            (-2 * S + 1, "0s"),
            (-S, "0s"),
            (-1, "0s"),
            (0, "0s"),
            (S - 1, "0s"),
            (S, "1s"),
            // Seconds below two minutes.
            (119 * S, "119s"),
            (120 * S - 1, "119s"),
            (120 * S, "2m"),
            (121 * S, "2m1s"),
            // Minutes and seconds below ten minutes, seconds left out when zero.
            (9 * M, "9m"),
            (9 * M + 59 * S, "9m59s"),
            (10 * M - 1, "9m59s"),
            (10 * M, "10m"),
            (10 * M + 59 * S, "10m"),
            // Minutes below three hours.
            (180 * M - 1, "179m"),
            (180 * M, "3h"),
            (3 * H + M, "3h1m"),
            (3 * H + M + 59 * S, "3h1m"),
            // Hours and minutes below eight hours.
            (8 * H - 1, "7h59m"),
            (8 * H, "8h"),
            (8 * H + 59 * M, "8h"),
            // Hours below two days.
            (48 * H - 1, "47h"),
            (48 * H, "2d"),
            (49 * H, "2d1h"),
            (49 * H + 59 * M, "2d1h"),
            // Days and hours below eight days.
            (8 * D - 1, "7d23h"),
            (8 * D, "8d"),
            (8 * D + 23 * H, "8d"),
            // Days below two years.
            (2 * Y - 1, "729d"),
            (2 * Y, "2y"),
            (2 * Y + D, "2y1d"),
            (2 * Y + D + 23 * H, "2y1d"),
            // Years and days below eight years.
            (8 * Y - 1, "7y364d"),
            (8 * Y, "8y"),
            (8 * Y + 364 * D, "8y"),
            // A Go duration ends at about 292 years.
            (i64::MAX, "292y"),
        ];
        for (nanos, expected) in cases {
            assert_eq!(human_duration(nanos), expected, "{nanos} ns");
        }
    }

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(second).unwrap()
    }

    #[test]
    fn ages_are_measured_from_the_creation_time() {
        let now = at(1_800_000_000);
        let then = |seconds_ago: i64| Time(at(1_800_000_000 - seconds_ago));
        assert_eq!(age(None, now), "<none>");
        assert_eq!(age(Some(&then(0)), now), "0s");
        assert_eq!(age(Some(&then(-1)), now), "0s");
        assert_eq!(age(Some(&then(-2)), now), "<invalid>");
        assert_eq!(age(Some(&then(3 * 3600 + 60)), now), "3h1m");
        assert_eq!(age(Some(&then(400 * 86400)), now), "400d");
        // Further apart than a Go duration reaches: saturated, as `time.Since` does.
        assert_eq!(age(Some(&Time(Timestamp::MIN)), Timestamp::MAX), "292y");
        assert_eq!(
            age(Some(&Time(Timestamp::MAX)), Timestamp::MIN),
            "<invalid>"
        );
    }

    #[test]
    fn labels_are_sorted_by_key_or_none() {
        let map = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<std::collections::BTreeMap<_, _>>()
        };
        assert_eq!(labels(None), "<none>");
        assert_eq!(labels(Some(&map(&[]))), "<none>");
        assert_eq!(
            labels(Some(&map(&[
                ("tier", "gold"),
                ("app", "shop"),
                ("a.b/c", "")
            ]))),
            "a.b/c=,app=shop,tier=gold"
        );
    }

    #[test]
    fn object_columns_end_with_age_then_labels() {
        let metadata = ObjectMeta {
            creation_timestamp: Some(Time(at(1_000))),
            labels: Some([("app".to_string(), "shop".to_string())].into()),
            ..Default::default()
        };
        let plain = ObjectColumns {
            now: at(1_090),
            show_labels: false,
        };
        assert_eq!(plain.headers(&["NAME"]), ["NAME", "AGE"]);
        assert_eq!(plain.row(&metadata, vec!["a".into()]), ["a", "90s"]);
        let labelled = ObjectColumns {
            show_labels: true,
            ..plain
        };
        assert_eq!(labelled.headers(&["NAME"]), ["NAME", "AGE", "LABELS"]);
        assert_eq!(
            labelled.row(&metadata, vec!["a".into()]),
            ["a", "90s", "app=shop"]
        );
    }
}
