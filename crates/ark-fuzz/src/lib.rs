//! A small mutation fuzzer that runs as an ordinary test on stable Rust, for the parsers that read
//! what others wrote (hooks files, annotations, tarballs, bucket files, durations, selectors).
//!
//! A target is a function of bytes that must return, not panic, whatever the bytes. Its inputs:
//! every file of `fuzz/corpus/<target>/` (the seeds), every file of `fuzz/regressions/<target>/`
//! (inputs that once failed: replayed each run), then `ARK_FUZZ_CASES` mutations of the seeds
//! (default 300: the bounded run of the test command) from `ARK_FUZZ_SEED` (default: a new one
//! each run). A failing input is written to `target/fuzz-failures/` and named in the panic, with
//! the seed that replays the run; copied into `fuzz/regressions/<target>/`, it stays a test.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

/// The repository's `fuzz/` directory.
fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut found: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.is_file())
        .map(|path| {
            let bytes = std::fs::read(&path).expect("a corpus file");
            (path, bytes)
        })
        .collect();
    found.sort();
    found
}

fn env_number(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    Some(
        value
            .parse()
            .unwrap_or_else(|_| panic!("{name}={value:?} is not a number")),
    )
}

/// How many mutated inputs each target tries.
pub fn cases() -> u64 {
    env_number("ARK_FUZZ_CASES").unwrap_or(300)
}

/// Runs `target` on its corpus, its regressions and `cases()` mutations of the corpus.
pub fn run(name: &str, target: impl Fn(&[u8])) {
    let corpus = files(&fuzz_dir().join("corpus").join(name));
    assert!(!corpus.is_empty(), "fuzz/corpus/{name}/ holds no seed");
    let regressions = files(&fuzz_dir().join("regressions").join(name));
    let seed = env_number("ARK_FUZZ_SEED").unwrap_or_else(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        nanos as u64 ^ u64::from(std::process::id())
    });
    let check = |input: &[u8], what: &str| {
        if catch_unwind(AssertUnwindSafe(|| target(input))).is_err() {
            let saved = save_failure(name, input);
            panic!(
                "fuzz target {name} panicked on {what} (saved as {}); replay with ARK_FUZZ_SEED={seed}, \
                 and keep it as a regression: cp {} fuzz/regressions/{name}/",
                saved.display(),
                saved.display()
            );
        }
    };
    for (path, input) in corpus.iter().chain(&regressions) {
        check(input, &path.display().to_string());
    }
    let mut rng = Rng(seed | 1);
    for case in 0..cases() {
        let (_, base) = &corpus[rng.below(corpus.len())];
        let (_, other) = &corpus[rng.below(corpus.len())];
        let input = mutate(&mut rng, base, other);
        check(&input, &format!("mutation {case} of seed {seed}"));
    }
}

fn save_failure(name: &str, input: &[u8]) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/fuzz-failures");
    let _ = std::fs::create_dir_all(&dir);
    let hash = input.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    });
    let path = dir.join(format!("{name}-{hash:016x}"));
    let _ = std::fs::write(&path, input);
    path
}

/// xorshift64*: enough for choosing mutations, and replayable from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

/// Bytes that matter to the formats fuzzed here: structure, quotes, escapes, extremes.
const INTERESTING: &[u8] = b"\0\xff\x7f\n\r\t \"'\\[]{}:,-#&*!|>%@`.0123456789/=";

/// One to eight edits of `base`: flip, overwrite, insert, delete, duplicate, splice from
/// `other`, truncate.
fn mutate(rng: &mut Rng, base: &[u8], other: &[u8]) -> Vec<u8> {
    let mut out = base.to_vec();
    for _ in 0..=rng.below(8) {
        let at = rng.below(out.len() + 1);
        match rng.below(7) {
            0 if at < out.len() => out[at] ^= 1 << rng.below(8),
            1 if at < out.len() => out[at] = INTERESTING[rng.below(INTERESTING.len())],
            2 => {
                let byte = INTERESTING[rng.below(INTERESTING.len())];
                let count = 1 + rng.below(64);
                out.splice(at..at, std::iter::repeat_n(byte, count));
            }
            3 => {
                let end = (at + 1 + rng.below(64)).min(out.len());
                out.drain(at.min(end)..end);
            }
            4 => {
                let end = (at + 1 + rng.below(256)).min(out.len());
                let copy = out[at.min(end)..end].to_vec();
                out.splice(at..at, copy);
            }
            5 if !other.is_empty() => {
                let from = rng.below(other.len());
                let end = (from + 1 + rng.below(256)).min(other.len());
                out.splice(at..at, other[from..end].iter().copied());
            }
            _ => out.truncate(at),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutations_are_replayable_from_their_seed() {
        let run = |seed| {
            let mut rng = Rng(seed);
            (0..50)
                .map(|_| mutate(&mut rng, b"resources: []", b"{}"))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
    }
}
