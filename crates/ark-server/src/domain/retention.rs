//! A schedule's retention rules (ark's own, in the Schedule's annotation `ark.io/retention`, which
//! Velero's CRD keeps): which of its Completed backups to keep, by the rules restic and kopia
//! have: the newest N, and the newest backup of each of the newest N hours, days, ISO weeks,
//! months and years (UTC) that have one. A backup that any rule keeps is kept.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use k8s_openapi::jiff::tz::TimeZone;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

/// A rule of a retention policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Rule {
    Last,
    Hourly,
    Daily,
    Weekly,
    Monthly,
    Yearly,
}

impl Rule {
    const ALL: [Rule; 6] = [
        Rule::Last,
        Rule::Hourly,
        Rule::Daily,
        Rule::Weekly,
        Rule::Monthly,
        Rule::Yearly,
    ];

    fn name(self) -> &'static str {
        match self {
            Rule::Last => "last",
            Rule::Hourly => "hourly",
            Rule::Daily => "daily",
            Rule::Weekly => "weekly",
            Rule::Monthly => "monthly",
            Rule::Yearly => "yearly",
        }
    }

    /// The period a backup started in, as this rule counts periods (None for `last`, which
    /// counts backups).
    fn period(self, started: Timestamp) -> Option<(i16, i16, i8, i8)> {
        let at = started.to_zoned(TimeZone::UTC);
        let (year, month, day, hour) = (at.year(), at.month(), at.day(), at.hour());
        match self {
            Rule::Last => None,
            Rule::Hourly => Some((year, i16::from(month), day, hour)),
            Rule::Daily => Some((year, i16::from(month), day, 0)),
            Rule::Weekly => {
                let week = at.date().iso_week_date();
                Some((week.year(), i16::from(week.week()), 0, 0))
            }
            Rule::Monthly => Some((year, i16::from(month), 0, 0)),
            Rule::Yearly => Some((year, 0, 0, 0)),
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A retention policy: how many of each rule's backups to keep (rules not given keep none).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Retention(BTreeMap<Rule, u32>);

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum RetentionError {
    #[error("{0:?} is not RULE=COUNT (RULE one of last, hourly, daily, weekly, monthly, yearly)")]
    NotARule(String),
    #[error("{rule}={count:?}: COUNT must be a whole number from 1")]
    NotACount { rule: Rule, count: String },
    #[error("{0} is given twice")]
    Twice(Rule),
    #[error("no rule given: a policy keeps at least one backup")]
    Empty,
}

impl FromStr for Retention {
    type Err = RetentionError;

    /// `last=7,daily=14,weekly=8`: rules separated by commas, spaces allowed around them.
    fn from_str(text: &str) -> Result<Self, RetentionError> {
        let mut rules = BTreeMap::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let not_a_rule = || RetentionError::NotARule(part.to_string());
            let (name, count) = part.split_once('=').ok_or_else(not_a_rule)?;
            let rule = (Rule::ALL.into_iter())
                .find(|r| r.name() == name.trim())
                .ok_or_else(not_a_rule)?;
            let count = count.trim();
            let n = (count.parse::<u32>().ok())
                .filter(|n| *n > 0)
                .ok_or_else(|| RetentionError::NotACount {
                    rule,
                    count: count.to_string(),
                })?;
            if rules.insert(rule, n).is_some() {
                return Err(RetentionError::Twice(rule));
            }
        }
        if rules.is_empty() {
            return Err(RetentionError::Empty);
        }
        Ok(Retention(rules))
    }
}

impl fmt::Display for Retention {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rules: Vec<String> = (self.0.iter()).map(|(r, n)| format!("{r}={n}")).collect();
        f.write_str(&rules.join(","))
    }
}

impl Retention {
    /// The backups the policy keeps, each with the rules that keep it, out of `backups` (a
    /// schedule's Completed ones: name and start, in any order). Newest first, each rule keeps
    /// the first backup of each period it has not seen yet, until it has its count.
    pub fn kept<'a, N: AsRef<str>>(
        &self,
        backups: &'a [(N, Timestamp)],
    ) -> BTreeMap<&'a str, Vec<Rule>> {
        let mut newest_first: Vec<(&str, Timestamp)> = (backups.iter())
            .map(|(name, at)| (name.as_ref(), *at))
            .collect();
        newest_first.sort_by(|a, b| (b.1, b.0).cmp(&(a.1, a.0)));
        let mut kept: BTreeMap<&str, Vec<Rule>> = BTreeMap::new();
        for (&rule, &count) in &self.0 {
            let mut taken = 0;
            let mut last_period = None;
            for &(name, started) in &newest_first {
                if taken == count {
                    break;
                }
                let period = rule.period(started);
                if period.is_some() && period == last_period {
                    continue;
                }
                last_period = period;
                taken += 1;
                kept.entry(name).or_default().push(rule);
            }
        }
        kept
    }
}

impl Retention {
    /// When each backup the policy keeps would go, if each of the schedule's `next` runs (in
    /// order) made a Completed backup: the first run after which no rule keeps it. None when it
    /// outlives every run given.
    pub fn goes_at<'a, N: AsRef<str>>(
        &self,
        backups: &'a [(N, Timestamp)],
        next: &[Timestamp],
    ) -> BTreeMap<&'a str, Option<Timestamp>> {
        let kept = self.kept(backups);
        let starts: BTreeMap<&str, Timestamp> =
            (backups.iter()).map(|(n, at)| (n.as_ref(), *at)).collect();
        let mut goes = BTreeMap::new();
        for (name, rules) in kept {
            let started = starts[name];
            let newer: Vec<Timestamp> = (backups.iter())
                .map(|(n, at)| (*at, n.as_ref()))
                .filter(|newer| *newer > (started, name))
                .map(|(at, _)| at)
                .collect();
            // The last rule to let it go decides; one that never does keeps it.
            let each = rules
                .iter()
                .map(|&rule| self.dropped_by(rule, started, &newer, next));
            goes.insert(
                name,
                each.collect::<Option<Vec<_>>>()
                    .and_then(|t| t.into_iter().max()),
            );
        }
        goes
    }

    /// How many of a schedule's next runs [`Self::goes_at`] needs to say when each kept backup
    /// goes: those of the span of the longest period rule (its count and one more of its
    /// periods), and at least as many as `last` counts.
    pub fn look_ahead(&self) -> (usize, SignedDuration) {
        let hours = |rule: Rule| match rule {
            Rule::Last => 0,
            Rule::Hourly => 1,
            Rule::Daily => 24,
            Rule::Weekly => 7 * 24,
            Rule::Monthly => 31 * 24,
            Rule::Yearly => 366 * 24,
        };
        let span = (self.0.iter())
            .map(|(&rule, &count)| hours(rule) * (i64::from(count) + 1))
            .max()
            .unwrap_or(0);
        let last = self.0.get(&Rule::Last).map_or(0, |&n| n as usize);
        (last, SignedDuration::from_hours(span))
    }

    /// The run after which `rule` no longer keeps a backup that started at `started`, with
    /// `newer` backups after it.
    fn dropped_by(
        &self,
        rule: Rule,
        started: Timestamp,
        newer: &[Timestamp],
        next: &[Timestamp],
    ) -> Option<Timestamp> {
        let count = self.0[&rule] as usize;
        let Some(period) = rule.period(started) else {
            // `last`: once `count` backups are newer.
            return next
                .get(count.checked_sub(newer.len())?.checked_sub(1)?)
                .copied();
        };
        // A period rule: once a later backup of its period is its newest, or `count` newer
        // periods have a backup.
        let mut periods: std::collections::BTreeSet<_> =
            newer.iter().filter_map(|at| rule.period(*at)).collect();
        for &run in next {
            let of = rule.period(run);
            if of == Some(period) {
                return Some(run);
            }
            periods.extend(of);
            if periods.len() >= count {
                return Some(run);
            }
        }
        None
    }
}

/// The Completed ones of a schedule's `backups`, as [`Retention::kept`] takes them: name and
/// start (or, without one, creation).
pub fn completed(backups: &[ark_api::Backup]) -> Vec<(String, Timestamp)> {
    use kube::ResourceExt;
    let started = |backup: &ark_api::Backup| {
        let start = backup
            .status
            .as_ref()
            .and_then(|s| s.start_timestamp.as_ref());
        start
            .or(backup.metadata.creation_timestamp.as_ref())
            .map(|t| t.0)
    };
    (backups.iter())
        .filter(|b| b.phase() == ark_api::BackupPhase::Completed)
        .filter_map(|b| Some((b.name_any(), started(b)?)))
        .collect()
}

/// The Completed backups a schedule made, found by their `velero.io/schedule-name` label (its
/// value as the backups carry it: the name, shortened past 63 characters), as [`completed`] reads
/// them; listed a page at a time, keeping only those.
pub async fn completed_of(
    kube: &crate::runtime::context::Kube,
    label: &str,
) -> kube::Result<Vec<(String, Timestamp)>> {
    let made = format!("{}={label}", ark_api::labels::SCHEDULE_NAME);
    let made = kube::api::ListParams::default().labels(&made);
    let mut all = Vec::new();
    let (client, namespace) = (&kube.client, &kube.namespace);
    crate::runtime::objects::each_typed_page::<ark_api::Backup>(client, namespace, &made, |page| {
        all.extend(completed(&page))
    })
    .await?;
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::jiff::SignedDuration;

    #[test]
    fn a_policy_is_read_and_written_back_and_bad_ones_are_named() {
        let policy: Retention = " last=3, daily=7,weekly=4 ".parse().unwrap();
        assert_eq!(policy.to_string(), "last=3,daily=7,weekly=4");
        let refused = |text: &str| text.parse::<Retention>().unwrap_err().to_string();
        assert_eq!(
            refused("daly=7"),
            "\"daly=7\" is not RULE=COUNT (RULE one of last, hourly, daily, weekly, monthly, yearly)"
        );
        assert_eq!(
            refused("daily=0"),
            "daily=\"0\": COUNT must be a whole number from 1"
        );
        assert_eq!(
            refused("daily=-1"),
            "daily=\"-1\": COUNT must be a whole number from 1"
        );
        assert_eq!(refused("daily=7,daily=3"), "daily is given twice");
        assert_eq!(
            refused("monthly"),
            "\"monthly\" is not RULE=COUNT (RULE one of last, hourly, daily, weekly, monthly, yearly)"
        );
        assert_eq!(
            refused(" , "),
            "no rule given: a policy keeps at least one backup"
        );
    }

    /// A daily schedule's year (2025, at 02:00 UTC every day), under grandfather-father-son:
    /// the kept set is exactly each rule's, worked out by hand.
    #[test]
    fn a_simulated_year_of_a_daily_schedule_keeps_exactly_what_each_rule_says() {
        let first: Timestamp = "2025-01-01T02:00:00Z".parse().unwrap();
        let names: Vec<String> = (0..365)
            .map(|d| {
                let at = (first + SignedDuration::from_hours(24 * d)).to_zoned(TimeZone::UTC);
                at.strftime("daily-%Y%m%d").to_string()
            })
            .collect();
        let backups: Vec<(&str, Timestamp)> = (names.iter().enumerate())
            .map(|(d, name)| {
                (
                    name.as_str(),
                    first + SignedDuration::from_hours(24 * d as i64),
                )
            })
            .collect();
        let policy: Retention = "last=3,daily=7,weekly=4,monthly=12,yearly=2"
            .parse()
            .unwrap();
        let kept = policy.kept(&backups);
        let rules_of = |name: &str| {
            kept.get(name)
                .map(|r| r.iter().map(|r| r.name()).collect::<Vec<_>>())
        };
        // The last three days: last and daily.
        for day in ["daily-20251231", "daily-20251230", "daily-20251229"] {
            assert_eq!(rules_of(day).unwrap()[..2], ["last", "daily"], "{day}");
        }
        let kept_by = |rule: Rule| -> Vec<&str> {
            (kept.iter())
                .filter(|(_, r)| r.contains(&rule))
                .map(|(n, _)| *n)
                .collect()
        };
        // Seven days: 25 to 31 December.
        assert_eq!(
            kept_by(Rule::Daily),
            [
                "daily-20251225",
                "daily-20251226",
                "daily-20251227",
                "daily-20251228",
                "daily-20251229",
                "daily-20251230",
                "daily-20251231"
            ]
        );
        // Four ISO weeks, each's newest day: 31 December is in 2026-W01 (Wednesday); then the
        // Sundays 28, 21 and 14 December.
        assert_eq!(
            kept_by(Rule::Weekly),
            [
                "daily-20251214",
                "daily-20251221",
                "daily-20251228",
                "daily-20251231"
            ]
        );
        // Twelve months, each's last day; the year once (2025 is the only year there is).
        assert_eq!(
            kept_by(Rule::Monthly),
            [
                "daily-20250131",
                "daily-20250228",
                "daily-20250331",
                "daily-20250430",
                "daily-20250531",
                "daily-20250630",
                "daily-20250731",
                "daily-20250831",
                "daily-20250930",
                "daily-20251031",
                "daily-20251130",
                "daily-20251231"
            ]
        );
        assert_eq!(
            rules_of("daily-20251231").unwrap(),
            ["last", "daily", "weekly", "monthly", "yearly"]
        );
        // Nothing else: 7 days, 2 more Sundays (the 28th is one of the days), 11 more month ends.
        assert_eq!(kept.len(), 7 + 2 + 11);
        assert_eq!(rules_of("daily-20250101"), None);
    }

    /// Each kept backup goes at the run after which the policy, worked again with that run's
    /// backup added, no longer keeps it: checked against `kept` itself, run by run.
    #[test]
    fn each_kept_backup_goes_at_the_first_run_after_which_no_rule_keeps_it() {
        let first: Timestamp = "2026-01-01T02:00:00Z".parse().unwrap();
        let every_6h = |n: i64| first + SignedDuration::from_hours(6 * n);
        let names: Vec<String> = (0..40).map(|n| format!("b{n:03}")).collect();
        let mut backups: Vec<(String, Timestamp)> = (0..40)
            .map(|n| (names[n as usize].clone(), every_6h(n)))
            .collect();
        let next: Vec<Timestamp> = (40..400).map(every_6h).collect();
        let policy: Retention = "last=3,daily=4,weekly=2".parse().unwrap();
        let goes: BTreeMap<String, Option<Timestamp>> = (policy.goes_at(&backups, &next))
            .into_iter()
            .map(|(name, at)| (name.to_string(), at))
            .collect();
        let kept: Vec<String> = policy
            .kept(&backups)
            .keys()
            .map(|n| n.to_string())
            .collect();
        assert_eq!(goes.len(), kept.len());
        // The simulation: each run's backup added in turn, the first run without it is when it
        // goes.
        let mut gone: BTreeMap<String, Timestamp> = BTreeMap::new();
        for (i, run) in next.iter().enumerate() {
            backups.push((format!("n{i:04}"), *run));
            let still = policy.kept(&backups);
            for name in &kept {
                if !still.contains_key(name.as_str()) {
                    gone.entry(name.clone()).or_insert(*run);
                }
            }
        }
        for name in &kept {
            assert_eq!(goes[name], gone.get(name).copied(), "{name}");
        }
        // The newest (Saturday 10 January, 20:00): last=3 lets it go after three runs, its ISO
        // week's newer backup (Sunday 11th, 02:00) at once, but daily=4 only once four newer
        // days have a backup: at 14 January, 02:00.
        assert!(goes.values().all(Option::is_some));
        assert_eq!(goes["b039"], Some("2026-01-14T02:00:00Z".parse().unwrap()));
        assert_eq!(every_6h(39), "2026-01-10T20:00:00Z".parse().unwrap());
    }

    #[test]
    fn backups_of_one_period_count_once_and_the_newest_of_it_is_kept() {
        let at = |text: &str| text.parse::<Timestamp>().unwrap();
        let backups = [
            ("a", at("2026-03-01T01:00:00Z")),
            ("b", at("2026-03-01T13:00:00Z")),
            ("c", at("2026-03-02T01:00:00Z")),
        ];
        let kept = "daily=2".parse::<Retention>().unwrap().kept(&backups);
        assert_eq!(kept.keys().copied().collect::<Vec<_>>(), ["b", "c"]);
        let kept = "last=2".parse::<Retention>().unwrap().kept(&backups);
        assert_eq!(kept.keys().copied().collect::<Vec<_>>(), ["b", "c"]);
        let kept = "hourly=5".parse::<Retention>().unwrap().kept(&backups);
        assert_eq!(kept.len(), 3);
    }
}
