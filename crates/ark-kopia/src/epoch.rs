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

/// The epoch blobs of a repository as listed, by kind: what `EpochState::resolve` reads.
#[derive(Debug, Default)]
pub struct EpochListing {
    /// `xe…`
    pub markers: Vec<BlobMeta>,
    /// `xw…`
    pub watermarks: Vec<BlobMeta>,
    /// `xs…`
    pub singles: Vec<BlobMeta>,
    /// `xr…`
    pub ranges: Vec<BlobMeta>,
    /// `xn…`
    pub uncompacted: Vec<BlobMeta>,
}

impl EpochState {
    /// Lists the epoch blobs and resolves the current index set, as `GetCompleteIndexSet` does.
    /// The uncompacted index blobs are listed at once, not epoch by epoch as kopia does: the
    /// listing costs what the repository holds, never what a marker's number claims.
    pub async fn load(blobs: &Blobs) -> Result<Self, Error> {
        let (markers, watermarks, singles, ranges, uncompacted) = tokio::try_join!(
            blobs.list("xe"),
            blobs.list("xw"),
            blobs.list("xs"),
            blobs.list("xr"),
            blobs.list("xn"),
        )?;
        Ok(Self::resolve(EpochListing {
            markers,
            watermarks,
            singles,
            ranges,
            uncompacted,
        }))
    }

    /// The state a listing comes to. Any names at all (a bucket is written by others) resolve in
    /// time bounded by the number of blobs: epoch numbers are only compared, never counted
    /// through, and never overflow.
    pub fn resolve(listing: EpochListing) -> Self {
        let write_epoch = listing
            .markers
            .iter()
            .filter_map(|b| epoch_of(&b.id))
            .max()
            .unwrap_or(0);
        let deletion_watermark = listing
            .watermarks
            .iter()
            .filter_map(|b| b.id.strip_prefix("xw")?.parse::<i64>().ok())
            .max()
            .and_then(|s| jiff::Timestamp::from_second(s).ok());

        let by_epoch = |blobs: Vec<BlobMeta>| {
            let mut grouped: BTreeMap<i64, Vec<BlobMeta>> = BTreeMap::new();
            for b in blobs {
                if let Some(n) = epoch_of(&b.id) {
                    grouped.entry(n).or_default().push(b);
                }
            }
            grouped
        };
        let single_sets: BTreeMap<i64, Vec<BlobMeta>> = by_epoch(listing.singles)
            .into_iter()
            .filter_map(|(n, bs)| Some((n, first_complete_set(&bs)?)))
            .collect();
        let mut uncompacted = by_epoch(listing.uncompacted);

        let mut by_range: BTreeMap<(i64, i64), Vec<BlobMeta>> = BTreeMap::new();
        for b in listing.ranges {
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
        // The first epoch past the checkpoints; none past a checkpoint up to the last number.
        let mut start = Some(0);
        for (range, set) in checkpoints {
            if start.is_some_and(|start| range.1 > start) {
                index_blobs.extend(set.iter().cloned());
                start = range.1.checked_add(1);
            }
        }
        // Each epoch from there to the one after the write epoch (a writer that saw a newer
        // marker may have written there): its compacted set once settled, its uncompacted
        // blobs otherwise.
        let last = write_epoch.saturating_add(1);
        let epochs: std::collections::BTreeSet<i64> = match start {
            Some(start) if start <= last => single_sets
                .range(start..=last)
                .chain(uncompacted.range(start..=last))
                .map(|(epoch, _)| *epoch)
                .collect(),
            _ => Default::default(),
        };
        let mut write_epoch_blobs = Vec::new();
        for epoch in epochs {
            let settled = epoch <= write_epoch - UNSETTLED;
            if settled && let Some(set) = single_sets.get(&epoch) {
                index_blobs.extend(set.iter().cloned());
                continue;
            }
            let blobs = uncompacted.remove(&epoch).unwrap_or_default();
            if epoch == write_epoch {
                write_epoch_blobs = blobs.clone();
            }
            index_blobs.extend(blobs);
        }
        EpochState {
            write_epoch,
            epoch_markers: listing.markers,
            index_blobs,
            write_epoch_blobs,
            deletion_watermark,
        }
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
                &format!("xe{}", self.write_epoch.saturating_add(1)),
                b"epoch-marker".to_vec(),
            )
            .await
    }
}

/// kopia's `findLongestRangeCheckpoint`: the chain of range checkpoints from epoch 0 that reaches
/// furthest (the fewest checkpoints on a tie; as in kopia, a chain must reach past epoch 0).
/// Worked from the last start back to 0, each start's best chain from those after it: no
/// recursion, so a bucket holding a long chain of checkpoints costs time, not stack.
fn longest_range_chain(sets: &[((i64, i64), Vec<BlobMeta>)]) -> Vec<((i64, i64), Vec<BlobMeta>)> {
    let mut by_start: BTreeMap<i64, Vec<usize>> = BTreeMap::new();
    for (i, ((lo, hi), _)) in sets.iter().enumerate() {
        if lo <= hi {
            by_start.entry(*lo).or_default().push(i);
        }
    }
    // From each start: how far its best chain reaches, in how many checkpoints, and its first.
    let mut best: HashMap<i64, (i64, usize, usize)> = HashMap::new();
    for (start, candidates) in by_start.iter().rev() {
        let mut choice: Option<(i64, usize, usize)> = None;
        for &i in candidates {
            let hi = sets[i].0.1;
            let (reach, length) = match hi.checked_add(1).and_then(|next| best.get(&next)) {
                Some(&(reach, length, _)) => (reach, length + 1),
                None => (hi, 1),
            };
            let better = match choice {
                None => reach > 0,
                Some((r, l, _)) => reach > r || (reach == r && length < l),
            };
            if better {
                choice = Some((reach, length, i));
            }
        }
        if let Some(choice) = choice {
            best.insert(*start, choice);
        }
    }
    let mut chain = Vec::new();
    let mut start = Some(0);
    while let Some(&(_, _, i)) = start.and_then(|s| best.get(&s)) {
        chain.push(sets[i].clone());
        start = sets[i].0.1.checked_add(1);
    }
    chain
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

    fn listing(names: &[&str]) -> EpochListing {
        let mut listing = EpochListing::default();
        for name in names {
            let kind = match &name[..2] {
                "xe" => &mut listing.markers,
                "xw" => &mut listing.watermarks,
                "xs" => &mut listing.singles,
                "xr" => &mut listing.ranges,
                _ => &mut listing.uncompacted,
            };
            kind.push(meta(name));
        }
        listing
    }

    fn ids(blobs: &[BlobMeta]) -> Vec<&str> {
        blobs.iter().map(|b| b.id.as_str()).collect()
    }

    #[test]
    fn the_index_is_the_checkpoints_the_settled_compacted_epochs_and_the_rest_uncompacted() {
        let state = EpochState::resolve(listing(&[
            "xe0",
            "xe1",
            "xe2",
            "xe3",
            "xe4",
            "xe5",
            "xr0_1_r-s1-c1",
            "xs2_a-s2-c1",
            "xn2_old",
            "xs3_b-s3-c1",
            "xn3_kept",
            "xn4_w1",
            "xn5_w2",
            "xn6_next",
            "xn7_beyond",
            "xw1700000000",
        ]));
        assert_eq!(state.write_epoch, 5);
        assert_eq!(
            ids(&state.index_blobs),
            [
                "xr0_1_r-s1-c1",
                "xs2_a-s2-c1",
                "xs3_b-s3-c1",
                "xn4_w1",
                "xn5_w2",
                "xn6_next"
            ]
        );
        assert_eq!(ids(&state.write_epoch_blobs), ["xn5_w2"]);
        assert_eq!(
            state.deletion_watermark,
            Some(jiff::Timestamp::from_second(1_700_000_000).unwrap())
        );
    }

    #[test]
    fn epoch_numbers_at_the_end_of_the_range_resolve_at_once_without_overflow() {
        let max = i64::MAX;
        let state = EpochState::resolve(listing(&[
            &format!("xe{max}"),
            "xe0",
            &format!("xr0_{max}_r"),
            &format!("xn{max}_a"),
            &format!("xs{max}_b"),
            "xn0_c",
            &format!("xw{max}"),
        ]));
        assert_eq!(state.write_epoch, max);
        assert_eq!(ids(&state.index_blobs), [format!("xr0_{max}_r")]);
        assert_eq!(state.deletion_watermark, None);
    }

    #[test]
    fn a_chain_of_a_hundred_thousand_checkpoints_costs_no_stack() {
        let sets: Vec<((i64, i64), Vec<BlobMeta>)> = (0..100_000)
            .map(|i| ((i, i), vec![meta(&format!("xr{i}_{i}_x"))]))
            .collect();
        let chain = longest_range_chain(&sets);
        assert_eq!(chain.len(), 100_000);
        assert_eq!(chain.last().unwrap().0, (99_999, 99_999));
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
