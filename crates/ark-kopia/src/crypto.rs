//! Kopia's cryptography, as v0.16 derives and applies it: the password's key (scrypt or PBKDF2,
//! `internal/crypto`), the format blob's AES-256-GCM (`internal/crypto/aesgcm.go`), contents'
//! keyed BLAKE2b hash (`repo/hashing`) and their AES256-GCM-HMAC-SHA256 encryption
//! (`repo/encryption`). AES-GCM is ring's (the rustls provider ark installs): its assembly opens
//! contents about three times as fast as a portable implementation, and a restore or a
//! verification of every byte is bound by it. BLAKE2b is blake2b_simd's (AVX2 where the CPU has
//! it), a third faster than a portable one.

use hmac::{Hmac, Mac};
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, Nonce, UnboundKey};
use sha2::Sha256;

use crate::Error;

pub const SCRYPT: &str = "scrypt-65536-8-1";
pub const PBKDF2: &str = "pbkdf2";
pub const HASH: &str = "BLAKE2B-256-128";
pub const ENCRYPTION: &str = "AES256-GCM-HMAC-SHA256";

const NONCE: usize = 12;
const TAG: usize = 16;
/// What encryption adds to a content: the nonce before it and the tag after.
pub const OVERHEAD: usize = NONCE + TAG;

/// The 32-byte key a password gives, salted with the repository's unique ID.
pub fn password_key(password: &str, salt: &[u8], algorithm: &str) -> Result<[u8; 32], Error> {
    if salt.len() < 16 {
        return Err(Error::Format(format!(
            "the unique ID is {} bytes; kopia needs at least 16",
            salt.len()
        )));
    }
    let mut key = [0u8; 32];
    match algorithm {
        SCRYPT => {
            crate::scrypt::derive(password.as_bytes(), salt, 16, 8, &mut key);
        }
        PBKDF2 => pbkdf2::pbkdf2_hmac::<Sha256>(password.as_bytes(), salt, 786_432, &mut key),
        other => {
            return Err(Error::Unsupported(format!(
                "key derivation {other:?} (ark reads {SCRYPT} and {PBKDF2})"
            )));
        }
    }
    Ok(key)
}

/// HKDF-SHA256, as kopia's `DeriveKeyFromMasterKey` and `deriveKey` call it.
fn hkdf(key: &[u8], salt: &[u8], info: &[u8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    hkdf::Hkdf::<Sha256>::new(Some(salt), key)
        .expand(info, &mut out)
        .expect("32 bytes is a valid HKDF length");
    out
}

/// An AES-256-GCM key.
fn aes_key(key: &[u8]) -> LessSafeKey {
    LessSafeKey::new(UnboundKey::new(&AES_256_GCM, key).expect("a 32-byte key"))
}

/// The format blob's and `kopia.blobcfg`'s encryption: AES-256-GCM with a key and associated
/// data derived from the password's key and the unique ID.
pub struct FormatCipher {
    cipher: LessSafeKey,
    associated: [u8; 32],
}

impl FormatCipher {
    pub fn new(password_key: &[u8; 32], unique_id: &[u8]) -> Self {
        let key = hkdf(password_key, unique_id, b"AES");
        FormatCipher {
            cipher: aes_key(&key),
            associated: hkdf(password_key, unique_id, b"CHECKSUM"),
        }
    }

    pub fn seal(&self, plain: &[u8]) -> Vec<u8> {
        seal(&self.cipher, plain, &self.associated)
    }

    /// `None` when the bytes were not sealed with this key: a wrong password, or a forged blob.
    pub fn open(&self, sealed: &[u8]) -> Option<Vec<u8>> {
        open(&self.cipher, sealed, &self.associated)
    }
}

/// `plain` sealed under a new random nonce: the nonce, the ciphertext, the tag.
fn seal(cipher: &LessSafeKey, plain: &[u8], associated: &[u8]) -> Vec<u8> {
    let mut nonce = [0u8; NONCE];
    crate::random(&mut nonce);
    let mut out = Vec::with_capacity(OVERHEAD + plain.len());
    out.extend_from_slice(&nonce);
    out.extend_from_slice(plain);
    let tag = cipher
        .seal_in_place_separate_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(associated),
            &mut out[NONCE..],
        )
        .expect("AES-GCM seals any length kopia writes");
    out.extend_from_slice(tag.as_ref());
    out
}

fn open(cipher: &LessSafeKey, sealed: &[u8], associated: &[u8]) -> Option<Vec<u8>> {
    open_owned(cipher, sealed.to_vec(), associated)
}

/// Opens `sealed` (nonce, ciphertext, tag) in its own buffer: the plaintext is moved to its front
/// as it is decrypted, and the buffer cut to it.
fn open_owned(cipher: &LessSafeKey, mut sealed: Vec<u8>, associated: &[u8]) -> Option<Vec<u8>> {
    if sealed.len() < OVERHEAD {
        return None;
    }
    let nonce = Nonce::try_assume_unique_for_key(&sealed[..NONCE]).ok()?;
    let plain = cipher
        .open_within(nonce, Aad::from(associated), &mut sealed, NONCE..)
        .ok()?
        .len();
    sealed.truncate(plain);
    Some(sealed)
}

/// A blob sealed with a key derived from the master key for one purpose, as kopia's
/// `Repository.DeriveKey` seals `kopia.maintenance`: AES-256-GCM, the nonce first.
pub struct PurposeCipher {
    cipher: LessSafeKey,
    associated: &'static [u8],
}

impl PurposeCipher {
    pub fn new(
        master_key: &[u8],
        unique_id: &[u8],
        purpose: &[u8],
        associated: &'static [u8],
    ) -> Self {
        let key = hkdf(master_key, unique_id, purpose);
        PurposeCipher {
            cipher: aes_key(&key),
            associated,
        }
    }

    pub fn seal(&self, plain: &[u8]) -> Vec<u8> {
        seal(&self.cipher, plain, self.associated)
    }

    pub fn open(&self, sealed: &[u8]) -> Option<Vec<u8>> {
        open(&self.cipher, sealed, self.associated)
    }
}

/// Contents' hash and encryption, from the repository's HMAC secret and master key.
#[derive(Clone)]
pub struct ContentCrypter {
    /// Keyed BLAKE2b-256 with the HMAC secret.
    hash_key: blake2b_simd::Params,
    key_derivation: Hmac<Sha256>,
}

impl ContentCrypter {
    pub fn new(
        hash: &str,
        encryption: &str,
        secret: &[u8],
        master_key: &[u8],
    ) -> Result<Self, Error> {
        if hash != HASH {
            return Err(Error::Unsupported(format!(
                "hash {hash:?} (ark reads {HASH})"
            )));
        }
        if encryption != ENCRYPTION {
            return Err(Error::Unsupported(format!(
                "encryption {encryption:?} (ark reads {ENCRYPTION})"
            )));
        }
        if secret.len() > blake2b_simd::KEYBYTES {
            let bytes = secret.len();
            return Err(Error::Format(format!("an HMAC secret of {bytes} bytes")));
        }
        let mut hash_key = blake2b_simd::Params::new();
        hash_key.hash_length(32).key(secret);
        // The per-content key's secret: HKDF(master key, salt "encryption", no info).
        let derivation = hkdf(master_key, b"encryption", &[]);
        Ok(ContentCrypter {
            hash_key,
            key_derivation: <Hmac<Sha256> as Mac>::new_from_slice(&derivation)
                .expect("HMAC takes any key length"),
        })
    }

    /// The 16-byte hash that names a content (and is its encryption IV).
    pub fn hash(&self, data: &[u8]) -> [u8; 16] {
        let full = self.hash_key.hash(data);
        let mut out = [0u8; 16];
        out.copy_from_slice(&full.as_bytes()[..16]);
        out
    }

    fn cipher_for(&self, iv: &[u8]) -> LessSafeKey {
        let mut h = self.key_derivation.clone();
        Mac::update(&mut h, iv);
        aes_key(&h.finalize().into_bytes())
    }

    pub fn encrypt(&self, plain: &[u8], iv: &[u8]) -> Vec<u8> {
        seal(&self.cipher_for(iv), plain, iv)
    }

    /// Encrypts `plain` as `encrypt` does, in its own buffer: a chunk of megabytes is not copied.
    pub fn seal_in_place(&self, mut plain: Vec<u8>, iv: &[u8]) -> Sealed {
        let mut nonce = [0u8; NONCE];
        crate::random(&mut nonce);
        let tag = self
            .cipher_for(iv)
            .seal_in_place_separate_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(iv),
                &mut plain,
            )
            .expect("AES-GCM seals any length kopia writes");
        let mut stored_tag = [0u8; TAG];
        stored_tag.copy_from_slice(tag.as_ref());
        Sealed {
            nonce,
            body: plain,
            tag: stored_tag,
        }
    }

    /// `None` when the bytes do not authenticate under this IV: a forged or damaged content.
    pub fn decrypt(&self, sealed: &[u8], iv: &[u8]) -> Option<Vec<u8>> {
        open(&self.cipher_for(iv), sealed, iv)
    }

    /// Decrypts as `decrypt` does, in the stored bytes' own buffer: a chunk of megabytes read
    /// back is not copied.
    pub fn decrypt_in_place(&self, sealed: Vec<u8>, iv: &[u8]) -> Option<Vec<u8>> {
        open_owned(&self.cipher_for(iv), sealed, iv)
    }
}

/// A content encrypted in place: the nonce, the ciphertext in the buffer it came in, the tag.
pub struct Sealed {
    nonce: [u8; NONCE],
    body: Vec<u8>,
    tag: [u8; TAG],
}

impl Sealed {
    /// Its length as stored (never empty: the nonce and tag are always there).
    pub fn stored_len(&self) -> usize {
        NONCE + self.body.len() + TAG
    }

    /// Appends it as stored: nonce, ciphertext, tag.
    pub fn append_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.nonce);
        out.extend_from_slice(&self.body);
        out.extend_from_slice(&self.tag);
    }

    /// Its buffer back, empty, for the next content.
    pub fn into_buffer(self) -> Vec<u8> {
        let mut body = self.body;
        body.clear();
        body
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_content_opens_only_with_its_iv_and_key() {
        let c = ContentCrypter::new(HASH, ENCRYPTION, &[1; 32], &[2; 32]).unwrap();
        let iv = c.hash(b"data");
        let sealed = c.encrypt(b"data", &iv);
        assert_eq!(sealed.len(), 4 + OVERHEAD);
        assert_eq!(c.decrypt(&sealed, &iv).unwrap(), b"data");
        assert!(c.decrypt(&sealed, &c.hash(b"other")).is_none());
        let other = ContentCrypter::new(HASH, ENCRYPTION, &[1; 32], &[3; 32]).unwrap();
        assert!(other.decrypt(&sealed, &iv).is_none());
        let mut in_place = Vec::new();
        c.seal_in_place(b"data".to_vec(), &iv)
            .append_to(&mut in_place);
        assert_eq!(in_place.len(), sealed.len());
        assert_eq!(c.decrypt(&in_place, &iv).unwrap(), b"data");
        assert_eq!(c.decrypt_in_place(in_place.clone(), &iv).unwrap(), b"data");
        assert!(
            c.decrypt_in_place(in_place.clone(), &c.hash(b"other"))
                .is_none()
        );
        assert!(other.decrypt_in_place(in_place, &iv).is_none());
        assert!(
            c.decrypt_in_place(sealed[..OVERHEAD - 1].to_vec(), &iv)
                .is_none()
        );
        assert!(c.decrypt_in_place(Vec::new(), &iv).is_none());
    }

    #[test]
    fn the_format_cipher_refuses_a_wrong_password() {
        let salt = [7u8; 32];
        let right = FormatCipher::new(&password_key("a", &salt, PBKDF2).unwrap(), &salt);
        let wrong = FormatCipher::new(&password_key("b", &salt, PBKDF2).unwrap(), &salt);
        let sealed = right.seal(b"{}");
        assert_eq!(right.open(&sealed).unwrap(), b"{}");
        assert!(wrong.open(&sealed).is_none());
        assert!(right.open(&sealed[..10]).is_none());
    }
}
