//! Objects (`repo/object`): a byte stream stored as one content, or split into chunks listed by an
//! indirect object (`{"stream":"kopia:indirect","entries":[{"s","l","o"}]}`).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::Error;
use crate::content::Contents;
use crate::index::ContentId;
use crate::splitter::Splitter;

/// How deep indirect objects may nest: kopia makes two levels for a file of terabytes; a forged
/// chain deeper than this is refused rather than followed.
const MAX_INDIRECTION: u8 = 4;
/// The largest index object ark reads (a list of chunks): 8 MiB lists a file of ~80 TiB.
const MAX_LIST_BYTES: usize = 64 << 20;

/// An object's ID: `I` per level of indirection, `Z` if compressed as an object, a content ID.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ObjectId {
    pub indirection: u8,
    pub compressed: bool,
    pub content: ContentId,
}

impl ObjectId {
    pub fn direct(content: ContentId) -> Self {
        ObjectId {
            indirection: 0,
            compressed: false,
            content,
        }
    }

    pub fn parse(text: &str) -> Result<Self, Error> {
        let bad = || Error::Invalid(format!("{text:?} is not an object ID"));
        let mut rest = text;
        let mut indirection = 0u8;
        while let Some(r) = rest.strip_prefix('I') {
            indirection = indirection.checked_add(1).ok_or_else(bad)?;
            rest = r;
        }
        let compressed = if let Some(r) = rest.strip_prefix('Z') {
            rest = r;
            true
        } else {
            false
        };
        rest = rest.strip_prefix('D').unwrap_or(rest);
        if indirection > 0 && compressed {
            return Err(bad());
        }
        Ok(ObjectId {
            indirection,
            compressed,
            content: ContentId::parse(rest).map_err(|_| bad())?,
        })
    }
}

impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for _ in 0..self.indirection {
            f.write_str("I")?;
        }
        if self.compressed {
            f.write_str("Z")?;
        }
        write!(f, "{}", self.content)
    }
}

impl fmt::Debug for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl Serialize for ObjectId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ObjectId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        ObjectId::parse(&text).map_err(serde::de::Error::custom)
    }
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct IndirectEntry {
    #[serde(rename = "s", default, skip_serializing_if = "is_zero")]
    pub start: u64,
    #[serde(rename = "l", default, skip_serializing_if = "is_zero")]
    pub length: u64,
    #[serde(rename = "o")]
    pub object: ObjectId,
}

#[derive(Serialize, Deserialize)]
struct IndirectObject {
    stream: String,
    entries: Vec<IndirectEntry>,
}

/// The chunks of an object, in order: one direct content, or an indirect object's list.
pub async fn chunks(contents: &Contents, id: ObjectId) -> Result<Vec<IndirectEntry>, Error> {
    if id.indirection == 0 {
        return Ok(vec![IndirectEntry {
            start: 0,
            length: u64::MAX,
            object: id,
        }]);
    }
    if id.indirection > MAX_INDIRECTION {
        return Err(Error::Invalid(format!(
            "object {id}: {} levels of indirection",
            id.indirection
        )));
    }
    let list_id = ObjectId {
        indirection: id.indirection - 1,
        ..id
    };
    let list = Box::pin(read_all(contents, list_id, MAX_LIST_BYTES)).await?;
    parse_indirect(&list, id)
}

/// The chunks indirect object `id` lists, from its list's JSON: each must start where the one
/// before ended, from 0, and be less indirect than `id`.
pub fn parse_indirect(list: &[u8], id: ObjectId) -> Result<Vec<IndirectEntry>, Error> {
    let parsed: IndirectObject = serde_json::from_slice(list)
        .map_err(|e| Error::Invalid(format!("object {id}: its chunk list: {e}")))?;
    if parsed.stream != "kopia:indirect" {
        return Err(Error::Invalid(format!(
            "object {id}: stream {:?}",
            parsed.stream
        )));
    }
    let mut at = 0u64;
    for e in &parsed.entries {
        if e.start != at || e.object.indirection >= id.indirection {
            return Err(Error::Invalid(format!(
                "object {id}: chunk {} at {} (expected at {at}, less indirect)",
                e.object, e.start
            )));
        }
        at = at
            .checked_add(e.length)
            .ok_or_else(|| Error::Invalid(format!("object {id}: lengths overflow")))?;
    }
    Ok(parsed.entries)
}

/// Reads a direct object (one content), decompressing an object-level `Z` object.
async fn read_direct(contents: &Contents, id: ObjectId, limit: usize) -> Result<Vec<u8>, Error> {
    let data = contents.read(&id.content).await?;
    if !id.compressed {
        return Ok(data);
    }
    if data.len() < 4 {
        return Err(Error::Invalid(format!(
            "object {id}: no compression header"
        )));
    }
    let header = u32::from_be_bytes(data[..4].try_into().unwrap());
    crate::compression::decompress(header, &data, limit, &format!("object {id}"))
}

/// Reads a whole object into memory, refusing one larger than `limit`.
pub async fn read_all(contents: &Contents, id: ObjectId, limit: usize) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    for chunk in chunks(contents, id).await? {
        let part = if chunk.object.indirection > 0 {
            Box::pin(read_all(contents, chunk.object, limit - out.len())).await?
        } else {
            read_direct(contents, chunk.object, limit - out.len()).await?
        };
        if chunk.length != u64::MAX && part.len() as u64 != chunk.length {
            return Err(Error::Invalid(format!(
                "object {id}: chunk {} holds {} bytes, its list says {}",
                chunk.object,
                part.len(),
                chunk.length
            )));
        }
        if out.len() + part.len() > limit {
            return Err(Error::Invalid(format!(
                "object {id} is larger than {limit} bytes"
            )));
        }
        out.extend_from_slice(&part);
    }
    Ok(out)
}

/// Streams an object chunk by chunk to `sink`, holding one chunk (at most 8 MiB) at a time.
pub async fn read_into(
    contents: &Contents,
    id: ObjectId,
    sink: &mut (dyn FnMut(&[u8]) -> Result<(), Error> + Send),
) -> Result<u64, Error> {
    use futures::StreamExt as _;
    let chunks = chunks(contents, id).await?;
    // Each chunk is fetched while the one before it is written: downloading overlaps decrypting
    // and writing, two chunks (16 MiB at most) held at a time.
    // Owned IDs: a stream of borrowed chunks would make the future not `Send`.
    let objects: Vec<ObjectId> = chunks.iter().map(|c| c.object).collect();
    let mut fetched = futures::stream::iter(objects)
        .map(|object| async move {
            match object.indirection {
                0 => read_direct(contents, object, 64 << 20).await.map(Some),
                _ => Ok(None),
            }
        })
        .buffered(2);
    let mut total = 0;
    for chunk in &chunks {
        let part = fetched.next().await.expect("one result per chunk")?;
        let n = match part {
            Some(part) => {
                sink(&part)?;
                part.len() as u64
            }
            None => Box::pin(read_into(contents, chunk.object, sink)).await?,
        };
        if chunk.length != u64::MAX && n != chunk.length {
            return Err(Error::Invalid(format!(
                "object {id}: chunk {} holds {n} bytes, its list says {}",
                chunk.object, chunk.length
            )));
        }
        total += n;
    }
    Ok(total)
}

/// Writes one object: split as kopia splits it, each chunk a content with `prefix`.
pub struct ObjectWriter<'a> {
    contents: &'a Contents,
    prefix: Option<u8>,
    splitter: Splitter,
    buffer: Vec<u8>,
    entries: Vec<IndirectEntry>,
    position: u64,
}

impl<'a> ObjectWriter<'a> {
    pub fn new(contents: &'a Contents, prefix: Option<u8>) -> Self {
        ObjectWriter {
            contents,
            prefix,
            splitter: Splitter::default(),
            buffer: Vec::new(),
            entries: Vec::new(),
            position: 0,
        }
    }

    pub async fn write(&mut self, mut data: &[u8]) -> Result<(), Error> {
        while !data.is_empty() {
            match self.splitter.next_split_point(data) {
                Some(n) => {
                    self.buffer.extend_from_slice(&data[..n]);
                    self.flush_chunk().await?;
                    data = &data[n..];
                }
                None => {
                    self.buffer.extend_from_slice(data);
                    break;
                }
            }
        }
        Ok(())
    }

    async fn flush_chunk(&mut self) -> Result<(), Error> {
        let length = self.buffer.len() as u64;
        let chunk = std::mem::take(&mut self.buffer);
        let (content, emptied) = self.contents.store(chunk, self.prefix).await?;
        self.buffer = emptied;
        self.entries.push(IndirectEntry {
            start: self.position,
            length,
            object: ObjectId::direct(content),
        });
        self.position += length;
        Ok(())
    }

    /// The object's ID: its one content, or an indirect object listing its chunks.
    pub async fn finish(mut self) -> Result<ObjectId, Error> {
        if !self.buffer.is_empty() || self.entries.is_empty() {
            self.flush_chunk().await?;
        }
        if self.entries.len() == 1 {
            return Ok(self.entries[0].object);
        }
        let mut list = serde_json::to_vec(&IndirectObject {
            stream: "kopia:indirect".into(),
            entries: std::mem::take(&mut self.entries),
        })
        .expect("JSON");
        list.push(b'\n');
        let mut writer = ObjectWriter::new(self.contents, Some(self.prefix.unwrap_or(b'x')));
        writer.write(&list).await?;
        let inner = Box::pin(writer.finish()).await?;
        Ok(ObjectId {
            indirection: inner.indirection + 1,
            ..inner
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_ids_parse_as_kopia_writes_them() {
        let hash = "0123456789abcdef0123456789abcdef";
        for text in [
            hash.to_string(),
            format!("k{hash}"),
            format!("Ix{hash}"),
            format!("IIx{hash}"),
            format!("Z{hash}"),
        ] {
            assert_eq!(ObjectId::parse(&text).unwrap().to_string(), text);
        }
        assert_eq!(
            ObjectId::parse(&format!("D{hash}")).unwrap().to_string(),
            hash
        );
        assert!(ObjectId::parse(&format!("IZ{hash}")).is_err());
        assert!(ObjectId::parse("I").is_err());
        assert!(ObjectId::parse(&format!("A{hash}")).is_err());
    }
}
