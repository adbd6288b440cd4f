//! Content compression (`repo/compression`): a 4-byte big-endian compressor ID, then the stream.
//! The index records the same ID, so a content is decompressed by what its index entry names.

use std::io::Read as _;

use crate::Error;

pub type HeaderId = u32;

pub const NONE: HeaderId = 0;
/// `zstd-fastest`, which kopia gives metadata contents (directories, manifests, indirect objects).
pub const ZSTD_FASTEST: HeaderId = 0x1101;

/// Compresses `data` as kopia's `zstd-fastest` does, header included.
pub fn compress_zstd_fastest(data: &[u8]) -> Vec<u8> {
    let mut out = ZSTD_FASTEST.to_be_bytes().to_vec();
    // zstd level 1 is what klauspost's SpeedFastest corresponds to.
    let mut encoder = zstd::stream::Encoder::new(&mut out, 1).expect("a zstd encoder");
    std::io::Write::write_all(&mut encoder, data).expect("writing to memory");
    encoder.finish().expect("writing to memory");
    out
}

/// Decompresses a content whose index entry names compressor `id`, refusing output beyond
/// `limit` bytes (the entry's original length), so a forged content cannot inflate without end.
pub fn decompress(id: HeaderId, data: &[u8], limit: usize, what: &str) -> Result<Vec<u8>, Error> {
    if data.len() < 4 || u32::from_be_bytes(data[..4].try_into().unwrap()) != id {
        return Err(Error::corrupt(
            what,
            format!("no compression header {id:#x}"),
        ));
    }
    let body = &data[4..];
    let reader: Box<dyn std::io::Read + '_> = match id {
        0x1100..=0x1103 => Box::new(
            zstd::stream::Decoder::new(body)
                .map_err(|e| Error::corrupt(what, format!("zstd: {e}")))?,
        ),
        0x1000..=0x1002 | 0x1300..=0x1302 => Box::new(flate2::read::GzDecoder::new(body)),
        0x1500..=0x1502 => Box::new(flate2::read::DeflateDecoder::new(body)),
        0x1200..=0x1203 => {
            return Err(Error::Unsupported(format!(
                "{what}: s2 compression ({id:#x}); Velero never writes it"
            )));
        }
        0x1400 => {
            return Err(Error::Unsupported(format!(
                "{what}: lz4 compression, deprecated in kopia"
            )));
        }
        other => {
            return Err(Error::corrupt(
                what,
                format!("unknown compressor {other:#x}"),
            ));
        }
    };
    let mut out = Vec::with_capacity(limit.min(8 << 20));
    reader
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| Error::corrupt(what, format!("decompressing: {e}")))?;
    if out.len() > limit {
        return Err(Error::corrupt(
            what,
            format!("decompresses beyond {limit} bytes"),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zstd_round_trips_and_a_bomb_stops_at_its_limit() {
        let data = vec![7u8; 100_000];
        let packed = compress_zstd_fastest(&data);
        assert_eq!(&packed[..4], &[0, 0, 0x11, 0x01]);
        assert_eq!(
            decompress(ZSTD_FASTEST, &packed, data.len(), "c").unwrap(),
            data
        );
        let e = decompress(ZSTD_FASTEST, &packed, 1000, "c")
            .unwrap_err()
            .to_string();
        assert!(e.contains("beyond 1000"), "{e}");
        assert!(decompress(0x1400, &packed, 10, "c").is_err());
    }
}
