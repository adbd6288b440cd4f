//! One crypto provider for every TLS connection in the process.

/// kube and object_store both speak rustls; without a process-wide provider chosen up front, rustls
/// panics at the first handshake when more than one provider is compiled in. ark uses ring.
pub fn install_crypto_provider() {
    // An error only means a provider is installed already (e.g. by a test harness): keep it.
    let _ = rustls::crypto::ring::default_provider().install_default();
}
