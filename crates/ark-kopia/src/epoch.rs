//! kopia's epoch index blobs (`internal/epoch/epoch_manager.go`): which index blobs make up the
//! repository's current index, and where a writer puts a new one.
//!
//! - `xe<N>`: epoch markers; the write epoch is the highest.
//! - `xn<N>_<hash>-<session>-c<K>`: uncompacted index blobs written during epoch N.
//! - `xs<N>_…-s<id>-c<K>`: epoch N compacted, valid once all K blobs of the set exist.
//! - `xr<A>_<B>_…`: epochs A..=B compacted into one range checkpoint.
//! - `xw<unix seconds>`: the deletion watermark.

use std::collections::{BTreeMap, HashMap};

use crate::Error;
use crate::blobs::{BlobMeta, Blobs};
use crate::format::EpochParameters;

/// Epochs this close to the write epoch are not settled: writers may still add to them.
const UNSETTLED: i64 = 2;

/// The repository's epoch state, as one listing saw it.
#[derive(Debug, Default)]
pub struct EpochState {
    pub write_epoch: i64,
    pub epoch_markers: Vec<BlobMeta>,
    /// The index blobs whose union is the current index.
    pub index_blobs: Vec<BlobMeta>,
    /// Uncompacted blobs of the write epoch: what decides whether it should advance.
    pub write_epoch_blobs: Vec<BlobMeta>,
    pub deletion_watermark: Option<jiff::Timestamp>,
}

/// The epoch number in `xn12_…` or `xe12`.
fn epoch_of(id: &str) -> Option<i64> {
    let head = id.split('_').next()?;
    let digits = head.trim_start_matches(|c: char| !c.is_ascii_digit());
    digits.parse().ok().filter(|n: &i64| *n >= 0)
}

/// `(A, B)` of `xrA_B_…`.
fn range_of(id: &str) -> Option<(i64, i64)> {
    let mut parts = id.split('_');
    let first = parts
        .next()?
        .trim_start_matches(|c: char| !c.is_ascii_digit());
    let second = parts.next()?;
    parts.next()?;
    Some((first.parse().ok()?, second.parse().ok()?))
}

/// kopia's `completeset.FindFirst`: blobs named `…-s<set>-c<count>` form a set once all `count`
/// exist; a blob not named so is a set of its own.
fn first_complete_set(blobs: &[BlobMeta]) -> Option<Vec<BlobMeta>> {
    let mut sets: HashMap<&str, Vec<BlobMeta>> = HashMap::new();
    for b in blobs {
        let parts: Vec<&str> = b.id.split('-').collect();
        let counted = (parts.len() >= 3 && parts[1].starts_with('s') && parts[2].starts_with('c'))
            .then(|| parts[2][1..].parse::<usize>().ok())
            .flatten();
        let Some(count) = counted else {
            return Some(vec![b.clone()]);
        };
        let set = sets.entry(parts[1]).or_default();
        set.push(b.clone());
        if set.len() == count {
            return Some(set.clone());
        }
    }
    None
}

impl EpochState {
    /// Lists the epoch blobs and resolves the current index set, as `GetCompleteIndexSet` does.
    pub async fn load(blobs: &Blobs) -> Result<Self, Error> {
        let (markers, watermarks, singles, ranges) = tokio::try_join!(
            blobs.list("xe"),
            blobs.list("xw"),
            blobs.list("xs"),
            blobs.list("xr"),
        )?;
        let write_epoch = markers
            .iter()
            .filter_map(|b| epoch_of(&b.id))
            .max()
            .unwrap_or(0);
        let deletion_watermark = watermarks
            .iter()
            .filter_map(|b| b.id.strip_prefix("xw")?.parse::<i64>().ok())
            .max()
            .and_then(|s| jiff::Timestamp::from_second(s).ok());

        let mut by_epoch: BTreeMap<i64, Vec<BlobMeta>> = BTreeMap::new();
        for b in singles {
            if let Some(n) = epoch_of(&b.id) {
                by_epoch.entry(n).or_default().push(b);
            }
        }
        let single_sets: BTreeMap<i64, Vec<BlobMeta>> = by_epoch
            .into_iter()
            .filter_map(|(n, bs)| Some((n, first_complete_set(&bs)?)))
            .collect();

        let mut by_range: BTreeMap<(i64, i64), Vec<BlobMeta>> = BTreeMap::new();
        for b in ranges {
            if let Some(r) = range_of(&b.id) {
                by_range.entry(r).or_default().push(b);
            }
        }
        let range_sets: Vec<((i64, i64), Vec<BlobMeta>)> = by_range
            .into_iter()
            .filter_map(|(r, bs)| Some((r, first_complete_set(&bs)?)))
            .collect();
        let checkpoints = longest_range_chain(&range_sets);

        let mut index_blobs = Vec::new();
        let mut start = 0;
        for (range, set) in checkpoints {
            if range.1 > start {
                index_blobs.extend(set.iter().cloned());
                start = range.1 + 1;
            }
        }
        let mut write_epoch_blobs = Vec::new();
        for epoch in start..=write_epoch + 1 {
            let settled = epoch <= write_epoch - UNSETTLED;
            if settled && let Some(set) = single_sets.get(&epoch) {
                index_blobs.extend(set.iter().cloned());
                continue;
            }
            let uncompacted = blobs.list(&format!("xn{epoch}_")).await?;
            if epoch == write_epoch {
                write_epoch_blobs = uncompacted.clone();
            }
            index_blobs.extend(uncompacted);
        }
        Ok(EpochState {
            write_epoch,
            epoch_markers: markers,
            index_blobs,
            write_epoch_blobs,
            deletion_watermark,
        })
    }

    /// kopia's `shouldAdvance`: the write epoch has lasted its minimum and holds enough blobs.
    pub fn should_advance(&self, p: &EpochParameters) -> bool {
        let bs = &self.write_epoch_blobs;
        let (Some(min), Some(max)) = (
            bs.iter().map(|b| b.modified).min(),
            bs.iter().map(|b| b.modified).max(),
        ) else {
            return false;
        };
        let lasted = max.duration_since(min).as_nanos();
        if lasted < i128::from(p.min_epoch_duration) {
            return false;
        }
        bs.len() as i64 >= p.epoch_advance_on_count_threshold
            || bs.iter().map(|b| b.length as i64).sum::<i64>()
                >= p.epoch_advance_on_total_size_bytes_threshold
    }

    /// Writes the next epoch's marker, as kopia does after a refresh that finds the epoch full.
    pub async fn advance(&self, blobs: &Blobs) -> Result<(), Error> {
        blobs
            .put(
                &format!("xe{}", self.write_epoch + 1),
                b"epoch-marker".to_vec(),
            )
            .await
    }
}

/// kopia's `findLongestRangeCheckpoint`: the chain of range checkpoints from epoch 0 that reaches
/// furthest (the fewest checkpoints on a tie).
fn longest_range_chain(sets: &[((i64, i64), Vec<BlobMeta>)]) -> Vec<((i64, i64), Vec<BlobMeta>)> {
    fn from(
        start: i64,
        sets: &[((i64, i64), Vec<BlobMeta>)],
        memo: &mut HashMap<i64, Vec<usize>>,
    ) -> Vec<usize> {
        if let Some(m) = memo.get(&start) {
            return m.clone();
        }
        let mut best: Vec<usize> = Vec::new();
        let mut reach = 0;
        for (i, ((lo, hi), _)) in sets.iter().enumerate() {
            if *lo != start || *hi < *lo {
                continue;
            }
            let mut chain = vec![i];
            chain.extend(from(hi + 1, sets, memo));
            let end = sets[*chain.last().unwrap()].0.1;
            if end > reach || (end == reach && chain.len() < best.len()) {
                reach = end;
                best = chain;
            }
        }
        memo.insert(start, best.clone());
        best
    }
    from(0, sets, &mut HashMap::new())
        .into_iter()
        .map(|i| sets[i].clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(id: &str) -> BlobMeta {
        BlobMeta {
            id: id.into(),
            length: 1,
            modified: jiff::Timestamp::UNIX_EPOCH,
        }
    }

    #[test]
    fn epoch_numbers_and_ranges_are_read_from_blob_ids() {
        assert_eq!(epoch_of("xe12"), Some(12));
        assert_eq!(epoch_of("xn3_abc-s1-c1"), Some(3));
        assert_eq!(epoch_of("xn_abc"), None);
        assert_eq!(range_of("xr0_6_abc-s1-c1"), Some((0, 6)));
        assert_eq!(range_of("xr0_abc"), None);
    }

    #[test]
    fn a_set_is_complete_only_when_all_its_blobs_exist() {
        let partial = [meta("xs1_a-sX-c2")];
        assert_eq!(first_complete_set(&partial), None);
        let whole = [meta("xs1_a-sX-c2"), meta("xs1_b-sX-c2")];
        assert_eq!(first_complete_set(&whole).unwrap().len(), 2);
        assert_eq!(first_complete_set(&[meta("xs1_a")]).unwrap().len(), 1);
    }

    #[test]
    fn the_longest_chain_of_range_checkpoints_from_epoch_zero_is_taken() {
        let sets = vec![
            ((0, 6), vec![meta("xr0_6_a")]),
            ((7, 13), vec![meta("xr7_13_b")]),
            ((0, 9), vec![meta("xr0_9_c")]),
            ((3, 20), vec![meta("xr3_20_d")]),
        ];
        let chain: Vec<(i64, i64)> = longest_range_chain(&sets)
            .into_iter()
            .map(|c| c.0)
            .collect();
        assert_eq!(chain, [(0, 6), (7, 13)]);
    }
}
