//! ark's schedules run when Velero's do: every expression here, at every time here, gets the same
//! next run from `ark_api::cron` as from robfig/cron v3.0.1 itself (the library Velero links),
//! built from the Go module proxy and run by `tests/robfig` (Go is one of the project's
//! prerequisites). Expressions cover every field form, the descriptors, `@every`, and zones with
//! daylight-saving changes, at times around those changes.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ark_api::cron::Cron;
use jiff::Timestamp;

/// How long robfig's side may take, building included (a cold module cache downloads it).
const DEADLINE: Duration = Duration::from_secs(300);

fn expressions() -> Vec<String> {
    let mut expressions: Vec<String> = [
        "* * * * *",
        "0 0 * * *",
        "*/5 * * * *",
        "5/15 * * * *",
        "0 */2 * * *",
        "15 3 * * 1-5",
        "0 0 1 * *",
        "0 0 1 * mon",
        "0 0 */10 * sun",
        "30 2 29 2 *",
        "30 2 31 2 *",
        "0 12 * jan-mar,oct *",
        "0 0 * * ?",
        "0 0 ? * 0",
        "59 23 31 12 *",
        "0,30 8-18 * * mon-fri",
        "0 0 15 * 6",
        "@yearly",
        "@annually",
        "@monthly",
        "@weekly",
        "@daily",
        "@midnight",
        "@hourly",
        "@every 5s",
        "@every 1m30s",
        "@every 1.5h",
        "@every 500ms",
        "@every 25h",
        "0 25 * * *",
        "* * * *",
        "@fortnightly",
        "*/0 * * * *",
        "* * * * 7",
        "a * * * *",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    // Across daylight-saving changes, in both hemispheres, on the hour and the half hour.
    for zone in [
        "America/New_York",
        "Europe/Paris",
        "Australia/Sydney",
        "Asia/Kolkata",
    ] {
        for fields in [
            "0 2 * * *",
            "30 1 * * *",
            "0 3 * * ?",
            "*/15 1-3 * * *",
            "0 0 * * *",
            "0 1 1 * *",
        ] {
            expressions.push(format!("CRON_TZ={zone} {fields}"));
            expressions.push(format!("TZ={zone} {fields}"));
        }
    }
    expressions
}

fn times() -> Vec<Timestamp> {
    let mut times = Vec::new();
    // Around the changes of 2024 in the zones above, every 20 minutes over a day, and some ends
    // of months and years.
    for day in [
        "2024-03-10T00:00:00Z",
        "2024-11-03T00:00:00Z",
        "2024-03-31T00:00:00Z",
        "2024-10-27T00:00:00Z",
        "2024-04-06T12:00:00Z",
        "2024-10-05T12:00:00Z",
    ] {
        let start: Timestamp = day.parse().unwrap();
        for step in 0..72 {
            times.push(start + jiff::SignedDuration::from_mins(20 * step));
        }
    }
    for time in [
        "2023-12-31T23:59:59.5Z",
        "2024-02-28T23:30:00Z",
        "2024-01-31T12:00:00Z",
        "2025-06-15T08:07:06Z",
    ] {
        times.push(time.parse().unwrap());
    }
    times
}

fn ark_answer(expression: &str, time: Timestamp) -> String {
    match Cron::parse(expression) {
        Err(_) => "error".into(),
        Ok(cron) => cron
            .next(time)
            .map_or("none".into(), |next| next.as_second().to_string()),
    }
}

#[test]
fn every_next_run_is_robfig_s() {
    let cases: Vec<(String, Timestamp)> = expressions()
        .into_iter()
        .flat_map(|e| times().into_iter().map(move |t| (e.clone(), t)))
        .collect();
    let input: String = cases
        .iter()
        .map(|(expression, time)| format!("{expression}\t{time}\n"))
        .collect();
    // Read at run time: the build is kept between clones (scripts/build-cache.sh).
    let dir =
        std::path::Path::new(&std::env::var_os("CARGO_MANIFEST_DIR").unwrap()).join("tests/robfig");
    let mut child = Command::new("go")
        .args(["run", "."])
        .current_dir(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("go (a prerequisite, see README.md) runs robfig's side");
    // Both pipes are served while the child runs: a full one would stall it.
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut text).map(|_| text)
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > DEADLINE {
            child.kill().unwrap();
            panic!("robfig's side did not answer within {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    writer.join().unwrap().unwrap();
    let stdout = reader.join().unwrap().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "go run {}: {stderr}", dir.display());
    let answers: Vec<String> = stdout
        .lines()
        .map(|line| {
            if line.starts_with("error") {
                "error".into()
            } else {
                line.to_string()
            }
        })
        .collect();
    assert_eq!(answers.len(), cases.len());
    // Most cases have a next run: the comparison is of times, not of errors.
    let runs = answers.iter().filter(|a| a.parse::<i64>().is_ok()).count();
    assert!(
        runs > cases.len() * 3 / 4,
        "{runs} runs in {} cases",
        cases.len()
    );
    let mut differing = Vec::new();
    for ((expression, time), robfig) in cases.iter().zip(&answers) {
        let ark = ark_answer(expression, *time);
        if &ark != robfig {
            differing.push(format!(
                "{expression:?} after {time}: ark {ark}, robfig {robfig}"
            ));
        }
    }
    assert!(
        differing.is_empty(),
        "{} of {} differ; the first: {:#?}",
        differing.len(),
        cases.len(),
        &differing[..differing.len().min(10)]
    );
}
