//! Content IDs and index v2 (`repo/content/index/index_v2.go`): which pack holds each content, at
//! which offset, and how it was stored. Parsing checks every offset against the blob, so a forged
//! index is an error naming the blob, never a panic or an allocation its size does not bound.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use crate::Error;
use crate::compression::HeaderId;

/// A content's ID: an optional prefix letter (`g`..`z`) and its 16-byte hash. Ordered as kopia
/// orders index keys: unprefixed first, then by prefix, then by hash.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ContentId {
    prefix: u8,
    hash: [u8; 16],
}

impl ContentId {
    pub fn new(prefix: Option<u8>, hash: [u8; 16]) -> Self {
        debug_assert!(prefix.is_none_or(|p| (b'g'..=b'z').contains(&p)));
        ContentId {
            prefix: prefix.unwrap_or(0),
            hash,
        }
    }

    pub fn hash(&self) -> &[u8; 16] {
        &self.hash
    }

    pub fn prefix(&self) -> Option<u8> {
        (self.prefix != 0).then_some(self.prefix)
    }

    /// The index key: the prefix byte (0 for none) and the hash.
    fn key(&self) -> [u8; 17] {
        let mut k = [0u8; 17];
        k[0] = self.prefix;
        k[1..].copy_from_slice(&self.hash);
        k
    }

    fn from_key(key: &[u8]) -> Option<Self> {
        let prefix = key[0];
        if prefix != 0 && !(b'g'..=b'z').contains(&prefix) {
            return None;
        }
        Some(ContentId {
            prefix,
            hash: key[1..17].try_into().ok()?,
        })
    }

    pub fn parse(text: &str) -> Result<Self, Error> {
        let bad = || Error::Invalid(format!("{text:?} is not a content ID"));
        let (prefix, hex) = match text.len() {
            32 => (0, text),
            33 => (text.as_bytes()[0], &text[1..]),
            _ => return Err(bad()),
        };
        if prefix != 0 && !(b'g'..=b'z').contains(&prefix) {
            return Err(bad());
        }
        let mut hash = [0u8; 16];
        hex::decode_to_slice(hex, &mut hash).map_err(|_| bad())?;
        Ok(ContentId { prefix, hash })
    }
}

impl fmt::Display for ContentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.prefix != 0 {
            write!(f, "{}", self.prefix as char)?;
        }
        write!(f, "{}", hex::encode(self.hash))
    }
}

impl fmt::Debug for ContentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Where and how one content is stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Info {
    pub id: ContentId,
    pub pack: Arc<str>,
    pub offset: u32,
    pub packed_length: u32,
    pub original_length: u32,
    pub timestamp: i64,
    pub deleted: bool,
    pub compression: HeaderId,
    pub format_version: u8,
    pub encryption_key_id: u8,
}

impl Info {
    /// kopia's merge rule (`contentInfoGreaterThan`): the newer entry wins; on a tie the live one,
    /// then the greater pack name.
    pub fn supersedes(&self, other: &Info) -> bool {
        if self.timestamp != other.timestamp {
            return self.timestamp > other.timestamp;
        }
        if self.deleted != other.deleted {
            return !self.deleted;
        }
        self.pack > other.pack
    }
}

/// Adds `info` to `map` unless an entry there supersedes it.
pub fn merge(map: &mut HashMap<ContentId, Info>, info: Info) {
    match map.get(&info.id) {
        Some(old) if !info.supersedes(old) => {}
        _ => {
            map.insert(info.id, info);
        }
    }
}

const HEADER: usize = 17;
const PACK_INFO: usize = 5;
const FORMAT_INFO: usize = 6;
const ENTRY_MIN: usize = 16;
const ENTRY_MAX: usize = 19;
const DELETED: u32 = 0x8000_0000;

fn be24(b: &[u8]) -> u32 {
    u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2])
}

/// Parses a whole v2 index, calling `each` for every entry. `blob` names it in errors.
pub fn parse(data: &[u8], blob: &str, mut each: impl FnMut(Info)) -> Result<(), Error> {
    let bad = |reason: String| Error::corrupt(blob, format!("index: {reason}"));
    if data.len() < HEADER {
        return Err(bad(format!(
            "{} bytes, shorter than its header",
            data.len()
        )));
    }
    let version = data[0];
    if version != 2 {
        return Err(match version {
            1 => Error::Unsupported(format!("{blob}: index version 1")),
            v => bad(format!("version {v}")),
        });
    }
    let key_size = data[1] as usize;
    let entry_size = u16::from_be_bytes([data[2], data[3]]) as usize;
    let entry_count = u32::from_be_bytes(data[4..8].try_into().unwrap()) as usize;
    let pack_count = u32::from_be_bytes(data[8..12].try_into().unwrap()) as usize;
    let format_count = data[12] as usize;
    let base_timestamp = i64::from(u32::from_be_bytes(data[13..17].try_into().unwrap()));
    if key_size != 17 {
        return Err(bad(format!(
            "keys of {key_size} bytes (ark reads BLAKE2B-256-128's 17)"
        )));
    }
    if !(ENTRY_MIN..=ENTRY_MAX).contains(&entry_size) {
        return Err(bad(format!("entries of {entry_size} bytes")));
    }
    let stride = key_size + entry_size;
    let packs_at = entry_count
        .checked_mul(stride)
        .and_then(|n| n.checked_add(HEADER))
        .filter(|&n| n <= data.len())
        .ok_or_else(|| {
            bad(format!(
                "{entry_count} entries do not fit in {} bytes",
                data.len()
            ))
        })?;
    let formats_at = pack_count
        .checked_mul(PACK_INFO)
        .and_then(|n| n.checked_add(packs_at))
        .filter(|&n| n <= data.len())
        .ok_or_else(|| bad(format!("{pack_count} packs do not fit")))?;
    if formats_at + format_count * FORMAT_INFO > data.len() {
        return Err(bad(format!("{format_count} formats do not fit")));
    }
    let mut packs = Vec::with_capacity(pack_count);
    for p in 0..pack_count {
        let info = &data[packs_at + p * PACK_INFO..][..PACK_INFO];
        let length = info[0] as usize;
        let at = u32::from_be_bytes(info[1..5].try_into().unwrap()) as usize;
        let name = data
            .get(at..at.saturating_add(length))
            .and_then(|n| std::str::from_utf8(n).ok())
            .filter(|n| crate::blobs::is_blob_id(n))
            .ok_or_else(|| bad(format!("pack {p}'s name is not a blob ID")))?;
        packs.push(Arc::<str>::from(name));
    }
    let formats: Vec<(HeaderId, u8, u8)> = (0..format_count)
        .map(|f| {
            let b = &data[formats_at + f * FORMAT_INFO..][..FORMAT_INFO];
            (u32::from_be_bytes(b[..4].try_into().unwrap()), b[4], b[5])
        })
        .collect();
    for e in 0..entry_count {
        let entry = &data[HEADER + e * stride..][..stride];
        let id = ContentId::from_key(&entry[..key_size])
            .ok_or_else(|| bad(format!("entry {e} has an invalid content prefix")))?;
        let v = &entry[key_size..];
        let offset_and_flags = u32::from_be_bytes(v[4..8].try_into().unwrap());
        let mut original_length = be24(&v[8..11]);
        let mut packed_length = be24(&v[11..14]);
        let mut pack_index = u32::from(u16::from_be_bytes([v[14], v[15]]));
        let format = v.get(16).copied().unwrap_or(0) as usize;
        if let Some(&extended) = v.get(17) {
            pack_index |= u32::from(extended) << 16;
        }
        if let Some(&high) = v.get(18) {
            original_length |= u32::from(high >> 4) << 24;
            packed_length |= u32::from(high & 0xf) << 24;
        }
        let pack = packs.get(pack_index as usize).ok_or_else(|| {
            bad(format!(
                "entry {id} names pack {pack_index} of {pack_count}"
            ))
        })?;
        let &(compression, format_version, encryption_key_id) = match formats.get(format) {
            Some(f) => f,
            None if format_count == 0 && format == 0 => &(0, 0, 0),
            None => {
                return Err(bad(format!(
                    "entry {id} names format {format} of {format_count}"
                )));
            }
        };
        each(Info {
            id,
            pack: pack.clone(),
            offset: offset_and_flags & !DELETED,
            packed_length,
            original_length,
            timestamp: base_timestamp + i64::from(u32::from_be_bytes(v[..4].try_into().unwrap())),
            deleted: offset_and_flags & DELETED != 0,
            compression,
            format_version,
            encryption_key_id,
        });
    }
    Ok(())
}

/// Builds a v2 index of `infos` exactly as kopia's `buildV2` lays it out.
pub fn build(infos: &[&Info]) -> Vec<u8> {
    let mut sorted: Vec<&Info> = infos.to_vec();
    sorted.sort_by_key(|i| i.id);
    let mut format_of: HashMap<(HeaderId, u8, u8), u8> = HashMap::new();
    let mut formats = Vec::new();
    let mut pack_of: HashMap<&str, u32> = HashMap::new();
    let mut packs: Vec<&str> = Vec::new();
    for i in &sorted {
        let f = (i.compression, i.format_version, i.encryption_key_id);
        format_of.entry(f).or_insert_with(|| {
            formats.push(f);
            (formats.len() - 1) as u8
        });
        pack_of.entry(&i.pack).or_insert_with(|| {
            packs.push(&i.pack);
            (packs.len() - 1) as u32
        });
    }
    let mut entry_size = ENTRY_MIN;
    if formats.len() > 1 {
        entry_size = 17;
    }
    if packs.len() > 1 << 16 {
        entry_size = 18;
    }
    if sorted
        .iter()
        .any(|i| i.packed_length >= 1 << 24 || i.original_length >= 1 << 24)
    {
        entry_size = ENTRY_MAX;
    }
    let key_size = 17;
    let extra_at = HEADER
        + sorted.len() * (key_size + entry_size)
        + packs.len() * PACK_INFO
        + formats.len() * FORMAT_INFO;
    let mut out = Vec::with_capacity(extra_at + packs.iter().map(|p| p.len()).sum::<usize>());
    out.push(2);
    out.push(key_size as u8);
    out.extend_from_slice(&(entry_size as u16).to_be_bytes());
    out.extend_from_slice(&(sorted.len() as u32).to_be_bytes());
    out.extend_from_slice(&(packs.len() as u32).to_be_bytes());
    out.push(formats.len() as u8);
    out.extend_from_slice(&0u32.to_be_bytes());
    for i in &sorted {
        let mut v = [0u8; ENTRY_MAX];
        v[..4].copy_from_slice(&(i.timestamp as u32).to_be_bytes());
        let flags = if i.deleted { DELETED } else { 0 };
        v[4..8].copy_from_slice(&(i.offset | flags).to_be_bytes());
        v[8..11].copy_from_slice(&i.original_length.to_be_bytes()[1..]);
        v[11..14].copy_from_slice(&i.packed_length.to_be_bytes()[1..]);
        let p = pack_of[&*i.pack];
        v[14..16].copy_from_slice(&(p as u16).to_be_bytes());
        v[16] = format_of[&(i.compression, i.format_version, i.encryption_key_id)];
        v[17] = (p >> 16) as u8;
        v[18] = (i.packed_length >> 24) as u8 | ((i.original_length >> 24) << 4) as u8;
        out.extend_from_slice(&i.id.key());
        out.extend_from_slice(&v[..entry_size]);
    }
    let mut name_at = extra_at as u32;
    for p in &packs {
        out.push(p.len() as u8);
        out.extend_from_slice(&name_at.to_be_bytes());
        name_at += p.len() as u32;
    }
    for (compression, version, key) in &formats {
        out.extend_from_slice(&compression.to_be_bytes());
        out.push(*version);
        out.push(*key);
    }
    for p in &packs {
        out.extend_from_slice(p.as_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(prefix: Option<u8>, n: u8, pack: &str, compression: HeaderId) -> Info {
        Info {
            id: ContentId::new(prefix, [n; 16]),
            pack: pack.into(),
            offset: u32::from(n) * 100,
            packed_length: 1 << 24 | u32::from(n),
            original_length: 5,
            timestamp: 1_700_000_000 + i64::from(n),
            deleted: n == 3,
            compression,
            format_version: 2,
            encryption_key_id: 0,
        }
    }

    #[test]
    fn an_index_round_trips_sorted_as_kopia_sorts_it() {
        let infos = [
            info(Some(b'k'), 1, "pa", 0x1101),
            info(None, 9, "pb", 0),
            info(None, 3, "pa", 0),
            info(Some(b'm'), 0, "qc", 0x1101),
        ];
        let data = build(&infos.iter().collect::<Vec<_>>());
        let mut back = Vec::new();
        parse(&data, "x", |i| back.push(i)).unwrap();
        let order: Vec<String> = back.iter().map(|i| i.id.to_string()).collect();
        assert_eq!(
            order,
            [
                "03".repeat(16),
                "09".repeat(16),
                format!("k{}", "01".repeat(16)),
                format!("m{}", "00".repeat(16))
            ]
        );
        let mut expected = infos.to_vec();
        expected.sort_by_key(|i| i.id);
        assert_eq!(back, expected);
    }

    #[test]
    fn a_truncated_or_forged_index_is_an_error_naming_the_blob() {
        let data = build(&[&info(None, 1, "pa", 0)]);
        for cut in 0..data.len() {
            let e = parse(&data[..cut], "xn0_abc", |_| {})
                .unwrap_err()
                .to_string();
            assert!(e.contains("xn0_abc"), "{e}");
        }
        let mut huge = data.clone();
        huge[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(parse(&huge, "b", |_| {}).is_err());
        let mut bad_pack = data;
        let last = bad_pack.len() - 1;
        bad_pack[last] = b'/';
        assert!(
            parse(&bad_pack, "b", |_| {})
                .unwrap_err()
                .to_string()
                .contains("not a blob ID")
        );
    }
}
