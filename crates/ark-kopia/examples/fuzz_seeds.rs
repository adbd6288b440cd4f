//! Writes the seeds of the kopia fuzz targets (`fuzz/corpus/kopia-*/`) from a real repository:
//! one that ark-kopia writes in memory, with the fixed keys the pack-index target decrypts with.
//!
//! `cargo run -p ark-kopia --example fuzz_seeds -- fuzz/corpus` (from the repository's root).
//! Each seed is checked to parse as its target parses it, so that the fuzzer starts deep in the
//! format. Each run differs in its random parts (unique ID, session, padding, times); the committed
//! seeds are one run's.

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::path::Path;
use std::sync::Arc;

use ark_kopia::blobs::Blobs;
use ark_kopia::compression;
use ark_kopia::content::{self, Contents};
use ark_kopia::format::{FormatBlob, RepositoryConfig};
use ark_kopia::index;
use ark_kopia::manifest;
use ark_kopia::object::{self, ObjectId, ObjectWriter};
use ark_kopia::snapshot::{self, EntryType, SnapshotManifest, SourceInfo, Time};

/// The keys of `fuzz/fuzz_targets/kopia-pack-index.rs`.
const HMAC_SECRET: [u8; 32] = [1; 32];
const MASTER_KEY: [u8; 32] = [2; 32];

fn write(corpus: &Path, target: &str, name: &str, bytes: &[u8]) {
    let dir = corpus.join(target);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(name), bytes).unwrap();
    println!("{target}/{name}: {} bytes", bytes.len());
}

async fn contents(store: &Arc<object_store::memory::InMemory>, root: &str) -> Contents {
    let mut config = RepositoryConfig::velero_default();
    config.hmac_secret = HMAC_SECRET.to_vec();
    config.master_key = MASTER_KEY.to_vec();
    let blobs = Blobs::new(store.clone(), root.into());
    Contents::open(blobs, &config, ("default".into(), "default".into()))
        .await
        .unwrap()
}

#[tokio::main]
async fn main() {
    let corpus = std::path::PathBuf::from(std::env::args().nth(1).expect("the corpus directory"));
    let store = Arc::new(object_store::memory::InMemory::new());

    // The format blob, as `Repository::create` writes it.
    let config = RepositoryConfig::velero_default();
    let format = FormatBlob::seal(&config, "static-passw0rd")
        .unwrap()
        .0
        .to_bytes();
    FormatBlob::parse(&format).unwrap();
    write(&corpus, "kopia-format-blob", "kopia.repository", &format);

    // A snapshot of a small tree: its directory objects, then its manifest.
    let repo = contents(&store, "small").await;
    let scratch = tempfile::tempdir().unwrap();
    let tree = scratch.path().join("mount");
    std::fs::create_dir_all(tree.join("data")).unwrap();
    std::fs::write(tree.join("hello.txt"), "hello\n").unwrap();
    std::fs::write(tree.join("data/rows.csv"), "1,a\n2,b\n").unwrap();
    std::os::unix::fs::symlink("data/rows.csv", tree.join("latest")).unwrap();
    let uploader = snapshot::Uploader::new(&repo, Default::default());
    let root = uploader.tree(&tree, None).await.unwrap();
    repo.flush().await.unwrap();
    let root_json = object::read_all(&repo, root.object, 1 << 20).await.unwrap();
    let data = snapshot::parse_directory(&root_json, "seed")
        .unwrap()
        .into_iter()
        .find(|e| e.entry_type == EntryType::Directory)
        .unwrap();
    write(&corpus, "kopia-directory", "root.json", &root_json);
    let data_json = object::read_all(&repo, data.object, 1 << 20).await.unwrap();
    snapshot::parse_directory(&data_json, "seed").unwrap();
    write(&corpus, "kopia-directory", "data.json", &data_json);
    let now = Time::now();
    let snapshot = SnapshotManifest {
        id: String::new(),
        source: SourceInfo {
            host: "default".into(),
            user_name: "default".into(),
            path: "/host_pods/uid/volumes/kubernetes.io~csi/pvc/mount".into(),
        },
        description: String::new(),
        start_time: now,
        end_time: now,
        stats: Default::default(),
        incomplete_reason: String::new(),
        root_entry: Some(root),
        tags: BTreeMap::from([("velero.io/backup".into(), "nightly".into())]),
        pins: Vec::new(),
    };
    let entry = manifest::new_entry(snapshot.labels(), &snapshot);
    let forgotten = manifest::deletion(&entry.id);
    manifest::write(&repo, vec![entry]).await.unwrap();
    repo.flush().await.unwrap();
    manifest::write(&repo, vec![forgotten]).await.unwrap();
    repo.flush().await.unwrap();
    // The target gzips its input: the seeds are the JSON within.
    for (n, info) in repo.list(Some(b'm')).iter().enumerate() {
        let gz = repo.read(&info.id).await.unwrap();
        manifest::parse_content(&gz, "seed").unwrap();
        let mut json = Vec::new();
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_end(&mut json)
            .unwrap();
        write(
            &corpus,
            "kopia-manifests",
            &format!("manifests-{n}.json"),
            &json,
        );
    }

    // The index of every content written, and the packs that carry their local index.
    let infos = repo.entries();
    let built = index::build(&infos.iter().collect::<Vec<_>>());
    let mut parsed = 0;
    index::parse(&built, "seed", |_| parsed += 1).unwrap();
    assert_eq!(parsed, infos.len());
    write(&corpus, "kopia-index", "index-v2", &built);
    for class in ["p", "q"] {
        let pack = &repo.blobs().list(class).await.unwrap()[0];
        let bytes = repo.blobs().get(&pack.id).await.unwrap();
        assert!(
            !content::local_index(repo.crypter(), &pack.id, &bytes)
                .unwrap()
                .is_empty()
        );
        write(
            &corpus,
            "kopia-pack-index",
            &format!("{class}-pack"),
            &bytes,
        );
    }

    // A metadata content as stored: zstd-fastest; and the other compressors ark reads.
    let zstd = compression::compress_zstd_fastest(&root_json);
    let mut gzip = 0x1000u32.to_be_bytes().to_vec();
    let mut gz = flate2::write::GzEncoder::new(&mut gzip, flate2::Compression::default());
    gz.write_all(&root_json).unwrap();
    gz.finish().unwrap();
    let mut deflate = 0x1500u32.to_be_bytes().to_vec();
    let mut df = flate2::write::DeflateEncoder::new(&mut deflate, flate2::Compression::default());
    df.write_all(&root_json).unwrap();
    df.finish().unwrap();
    for (name, bytes) in [("zstd-fastest", zstd), ("gzip", gzip), ("deflate", deflate)] {
        let id = u32::from_be_bytes(bytes[..4].try_into().unwrap());
        let plain = compression::decompress(id, &bytes, 1 << 20, "seed").unwrap();
        assert_eq!(plain, root_json);
        write(&corpus, "kopia-compression", name, &bytes);
    }

    // An object of 9 MiB, in chunks of 2 to 8 MiB (the splitter's bounds): its indirect list; and a
    // list of two small chunks, as kopia writes one.
    let big = contents(&store, "big").await;
    let mut writer = ObjectWriter::new(&big, None);
    writer.write(&vec![0; 9 << 20]).await.unwrap();
    let id = writer.finish().await.unwrap();
    big.flush().await.unwrap();
    let list_id = ObjectId {
        indirection: 0,
        ..id
    };
    let list = object::read_all(&big, list_id, 1 << 20).await.unwrap();
    assert!(object::parse_indirect(&list, id).unwrap().len() > 1);
    write(&corpus, "kopia-indirect", "9-mib.json", &list);
    let small = br#"{"stream":"kopia:indirect","entries":[{"l":5,"o":"0123456789abcdef0123456789abcdef"},{"s":5,"l":7,"o":"k00112233445566778899aabbccddeeff"}]}"#;
    let target_id = ObjectId::parse("Ix0123456789abcdef0123456789abcdef").unwrap();
    assert_eq!(object::parse_indirect(small, target_id).unwrap().len(), 2);
    write(&corpus, "kopia-indirect", "small.json", small);
}
