//! How to reach the cluster: [`cluster::Access`] (what a kubeconfig context
//! or a service account gives), kubeconfig files and in-cluster service
//! accounts (`kubeconfig`, over the bounded `yaml` reader), the credentials
//! configured (`auth`) and had at run time (`credentials`), exec plugins
//! (`exec`), secrets that never print (`secret`), bounded file reads
//! (`files`), pure TLS checks (`pem`), proxies and NO_PROXY (`proxy`), the
//! HTTP agent with its TLS and TCP connectors (`transport`, `keepalive`) and
//! the credentials' header added below ureq (`authorize`). Dependencies run
//! one way, from the leaves (`secret`, `files`, `pem`, `yaml`) up to
//! `kubeconfig` and `transport`; `Access`'s kubeconfig constructors live in
//! `kubeconfig`, so `cluster` knows nothing of it.

pub(crate) mod auth;
pub(crate) mod authorize;
pub(crate) mod cluster;
pub(crate) mod credentials;
pub(crate) mod exec;
pub(crate) mod files;
pub(crate) mod keepalive;
pub(crate) mod kubeconfig;
pub(crate) mod pem;
pub(crate) mod proxy;
pub(crate) mod secret;
pub(crate) mod transport;
mod yaml;
