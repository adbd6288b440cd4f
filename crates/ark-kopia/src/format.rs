//! The format blob, `kopia.repository` (`repo/format/format_blob.go`), and the repository
//! configuration it seals (`repository_config.go`, `content_format.go`).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::{Deserialize, Serialize};

use crate::Error;
use crate::crypto::{self, FormatCipher};

pub const FORMAT_BLOB: &str = "kopia.repository";
pub const BLOB_CONFIG_BLOB: &str = "kopia.blobcfg";
/// Velero's marker (`udmrepo.Repository`): without it Velero takes the repository as not
/// initialised.
pub const VELERO_MARKER_BLOB: &str = "udmrepo.Repository";
const FORMAT_ENCRYPTION: &str = "AES256_GCM";
pub const SPLITTER: &str = "DYNAMIC-4M-BUZHASH";
/// The largest format blob kopia writes is 65,000 bytes; a bigger one is refused unread.
pub const FORMAT_BLOB_LIMIT: usize = 1 << 20;

mod b64 {
    use super::BASE64;
    use base64::Engine as _;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&BASE64.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = Option::<String>::deserialize(d)?.unwrap_or_default();
        BASE64.decode(text).map_err(serde::de::Error::custom)
    }
}

/// `kopia.repository`, as JSON.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FormatBlob {
    #[serde(default)]
    pub tool: String,
    #[serde(rename = "buildVersion", default)]
    pub build_version: String,
    #[serde(rename = "buildInfo", default)]
    pub build_info: String,
    #[serde(rename = "uniqueID", with = "b64")]
    pub unique_id: Vec<u8>,
    #[serde(rename = "keyAlgo")]
    pub key_algorithm: String,
    #[serde(rename = "encryption")]
    pub encryption: String,
    #[serde(rename = "encryptedBlockFormat", with = "b64", default)]
    pub encrypted_format: Vec<u8>,
}

/// Epoch manager parameters; durations in nanoseconds, as Go's `time.Duration` marshals.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct EpochParameters {
    #[serde(default)]
    pub enabled: bool,
    #[serde(default)]
    pub epoch_refresh_frequency: i64,
    #[serde(default)]
    pub full_checkpoint_frequency: i64,
    #[serde(default)]
    pub cleanup_safety_margin: i64,
    #[serde(default)]
    pub min_epoch_duration: i64,
    #[serde(default)]
    pub epoch_advance_on_count_threshold: i64,
    #[serde(default)]
    pub epoch_advance_on_total_size_bytes_threshold: i64,
    #[serde(default)]
    pub delete_parallelism: i64,
}

const MINUTE: i64 = 60_000_000_000;

impl Default for EpochParameters {
    /// kopia's `epoch.DefaultParameters()`.
    fn default() -> Self {
        EpochParameters {
            enabled: true,
            epoch_refresh_frequency: 20 * MINUTE,
            full_checkpoint_frequency: 7,
            cleanup_safety_margin: 240 * MINUTE,
            min_epoch_duration: 24 * 60 * MINUTE,
            epoch_advance_on_count_threshold: 20,
            epoch_advance_on_total_size_bytes_threshold: 10 << 20,
            delete_parallelism: 4,
        }
    }
}

/// The sealed configuration: `{"format": RepositoryConfig}`. Fields ark does not know are kept,
/// so that nothing kopia wrote is lost if ark ever writes the blob back.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RepositoryConfig {
    #[serde(default)]
    pub hash: String,
    #[serde(default)]
    pub encryption: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ecc: String,
    #[serde(
        rename = "eccOverheadPercent",
        default,
        skip_serializing_if = "is_zero"
    )]
    pub ecc_overhead_percent: i64,
    #[serde(rename = "secret", with = "b64", default)]
    pub hmac_secret: Vec<u8>,
    #[serde(rename = "masterKey", with = "b64", default)]
    pub master_key: Vec<u8>,
    #[serde(default)]
    pub version: i64,
    #[serde(rename = "maxPackSize", default)]
    pub max_pack_size: i64,
    #[serde(rename = "indexVersion", default)]
    pub index_version: i64,
    #[serde(rename = "epochParameters", default)]
    pub epoch_parameters: EpochParameters,
    #[serde(rename = "enablePasswordChange", default)]
    pub enable_password_change: bool,
    #[serde(default)]
    pub splitter: String,
    #[serde(
        rename = "upgradeLock",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub upgrade_lock: Option<serde_json::Value>,
    #[serde(
        rename = "requiredFeatures",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub required_features: Option<serde_json::Value>,
    #[serde(flatten)]
    pub unknown: serde_json::Map<String, serde_json::Value>,
}

fn is_zero(v: &i64) -> bool {
    *v == 0
}

#[derive(Serialize, Deserialize)]
struct Sealed {
    format: RepositoryConfig,
}

impl RepositoryConfig {
    /// The configuration Velero gives a new repository: kopia's defaults, format version 3.
    pub fn velero_default() -> Self {
        let mut hmac_secret = vec![0; 32];
        let mut master_key = vec![0; 32];
        crate::random(&mut hmac_secret);
        crate::random(&mut master_key);
        RepositoryConfig {
            hash: crypto::HASH.into(),
            encryption: crypto::ENCRYPTION.into(),
            ecc: String::new(),
            ecc_overhead_percent: 0,
            hmac_secret,
            master_key,
            version: 3,
            max_pack_size: 20 << 20,
            index_version: 2,
            epoch_parameters: EpochParameters::default(),
            enable_password_change: true,
            splitter: SPLITTER.into(),
            upgrade_lock: None,
            required_features: None,
            unknown: serde_json::Map::new(),
        }
    }

    /// Refuses, by name, what ark does not implement: format versions other than 2 and 3, index
    /// versions other than 2, error correction, an upgrade in progress, required features.
    pub fn validate(&self) -> Result<(), Error> {
        if !(2..=3).contains(&self.version) {
            return Err(Error::Unsupported(format!(
                "format version {} (ark reads versions 2 and 3; kopia writes 3 unless told otherwise)",
                self.version
            )));
        }
        if self.index_version != 2 {
            return Err(Error::Unsupported(format!(
                "index version {}",
                self.index_version
            )));
        }
        if !self.ecc.is_empty() && self.ecc_overhead_percent > 0 {
            return Err(Error::Unsupported(format!(
                "error correction {:?}",
                self.ecc
            )));
        }
        if self.upgrade_lock.as_ref().is_some_and(|v| !v.is_null()) {
            return Err(Error::Unsupported(
                "a repository whose format upgrade is under way (kopia's upgradeLock)".into(),
            ));
        }
        if self
            .required_features
            .as_ref()
            .is_some_and(|v| v.as_array().is_some_and(|a| !a.is_empty()))
        {
            return Err(Error::Unsupported(format!(
                "required features {}",
                self.required_features.as_ref().unwrap()
            )));
        }
        if !(1 << 20..=120 << 20).contains(&self.max_pack_size) {
            return Err(Error::Format(format!(
                "max pack size {}",
                self.max_pack_size
            )));
        }
        if self.splitter != SPLITTER {
            return Err(Error::Unsupported(format!(
                "splitter {:?} (ark splits with {SPLITTER}, Velero's)",
                self.splitter
            )));
        }
        if !self.epoch_parameters.enabled {
            return Err(Error::Unsupported(
                "a repository without epoch indexes".into(),
            ));
        }
        Ok(())
    }
}

impl FormatBlob {
    pub fn parse(bytes: &[u8]) -> Result<Self, Error> {
        if bytes.len() > FORMAT_BLOB_LIMIT {
            return Err(Error::corrupt(
                FORMAT_BLOB,
                format!("{} bytes", bytes.len()),
            ));
        }
        let blob: FormatBlob = serde_json::from_slice(bytes)
            .map_err(|e| Error::corrupt(FORMAT_BLOB, format!("not kopia's JSON: {e}")))?;
        if blob.encryption != FORMAT_ENCRYPTION {
            return Err(Error::Unsupported(format!(
                "format encryption {:?} (kopia writes {FORMAT_ENCRYPTION})",
                blob.encryption
            )));
        }
        Ok(blob)
    }

    /// A new format blob sealing `config` under `password`, with a random unique ID.
    pub fn seal(config: &RepositoryConfig, password: &str) -> Result<(Self, [u8; 32]), Error> {
        let mut unique_id = vec![0; 32];
        crate::random(&mut unique_id);
        let key = crypto::password_key(password, &unique_id, crypto::SCRYPT)?;
        let plain = serde_json::to_vec(&Sealed {
            format: config.clone(),
        })
        .expect("the configuration serialises");
        let blob = FormatBlob {
            tool: "https://github.com/kopia/kopia".into(),
            build_version: format!("ark-{}", env!("CARGO_PKG_VERSION")),
            build_info: "ark".into(),
            encrypted_format: FormatCipher::new(&key, &unique_id).seal(&plain),
            unique_id,
            key_algorithm: crypto::SCRYPT.into(),
            encryption: FORMAT_ENCRYPTION.into(),
        };
        Ok((blob, key))
    }

    /// The password's key; slow by design (scrypt), so callers derive it once.
    pub fn password_key(&self, password: &str) -> Result<[u8; 32], Error> {
        crypto::password_key(password, &self.unique_id, &self.key_algorithm)
    }

    pub fn open(&self, password_key: &[u8; 32]) -> Result<RepositoryConfig, Error> {
        let plain = FormatCipher::new(password_key, &self.unique_id)
            .open(&self.encrypted_format)
            .ok_or(Error::WrongPassword)?;
        let sealed: Sealed = serde_json::from_slice(&plain)
            .map_err(|e| Error::corrupt(FORMAT_BLOB, format!("its sealed configuration: {e}")))?;
        sealed.format.validate()?;
        Ok(sealed.format)
    }

    /// As kopia writes it: indented JSON with a final newline.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = serde_json::to_vec_pretty(self).expect("the format blob serialises");
        out.push(b'\n');
        out
    }

    /// `kopia.blobcfg`: no retention, sealed like the configuration.
    pub fn blob_config(&self, password_key: &[u8; 32]) -> Vec<u8> {
        FormatCipher::new(password_key, &self.unique_id)
            .seal(br#"{"retentionMode":"","retentionPeriod":0}"#)
    }

    /// Velero's marker blob: the same unique ID, base64, in `{"uniqueID": …}`.
    pub fn velero_marker(&self) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({ "uniqueID": BASE64.encode(&self.unique_id) }))
            .expect("JSON")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_configuration_opens_with_its_password_only() {
        let config = RepositoryConfig::velero_default();
        let (blob, _) = FormatBlob::seal(&config, "static-passw0rd").unwrap();
        let parsed = FormatBlob::parse(&blob.to_bytes()).unwrap();
        let key = parsed.password_key("static-passw0rd").unwrap();
        let opened = parsed.open(&key).unwrap();
        assert_eq!(opened.master_key, config.master_key);
        assert_eq!(opened.epoch_parameters, EpochParameters::default());
        let wrong = parsed.password_key("other").unwrap();
        assert!(matches!(parsed.open(&wrong), Err(Error::WrongPassword)));
    }

    #[test]
    fn format_versions_ark_does_not_read_are_refused_by_name() {
        let mut config = RepositoryConfig::velero_default();
        config.version = 1;
        let e = config.validate().unwrap_err().to_string();
        assert!(e.contains("format version 1"), "{e}");
        config.version = 4;
        assert!(
            config
                .validate()
                .unwrap_err()
                .to_string()
                .contains("format version 4")
        );
    }
}
