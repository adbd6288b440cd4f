# Pinned versions of the local test cluster; the cache directory is keyed by them so that changing a
# version builds afresh instead of mixing binaries.
KUBE_VERSION=v1.35.4
ETCD_VERSION=v3.6.16
KWOK_VERSION=v0.8.0
SEAWEEDFS_VERSION=4.48
# The Azure Blob stand-in installs into a versioned folder of the same cache. (No GCS stand-in on
# the registries this project reaches serves the XML API object_store speaks: see the README.)
AZURITE_VERSION=3.37.0
AZURE_STORAGE_BLOB_VERSION=12.31.1
ARK_CLUSTER_CACHE="${ARK_CLUSTER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ark-cluster/k8s-$KUBE_VERSION-etcd-$ETCD_VERSION-kwok-$KWOK_VERSION-weed-$SEAWEEDFS_VERSION}"
