//! How to reach the cluster: [`cluster::Access`] (what a kubeconfig context
//! or a service account gives), kubeconfig files (`kubeconfig`: the model of
//! one file over the bounded `yaml` reader, and the merge and resolution
//! kubectl does) and in-cluster service accounts (`in_cluster`), the
//! credentials configured (`auth`) and had at run time (`credentials`), exec
//! plugins (`exec`), secrets that never print (`secret`), bounded file reads
//! (`files`), pure TLS checks (`pem`), URLs read as Go reads them (`url`),
//! proxies and NO_PROXY (`proxy`), the HTTP agent with its TLS and TCP
//! connectors (`transport`, `keepalive`), the credentials' header added
//! below ureq (`authorize`) and response bodies masked across it (`mask`). Dependencies run one way, from the leaves
//! (`url`, `files`, `pem`, `yaml`; `secret` over `url`) up to `kubeconfig`
//! and `transport`; `Access`'s kubeconfig and in-cluster constructors live in
//! `kubeconfig` and `in_cluster`, so `cluster` knows nothing of them.

pub(crate) mod auth;
#[allow(dead_code)] // ureq's glue, unused since the stream's wiring; removed next
pub(crate) mod authorize;
pub(crate) mod client;
pub(crate) mod cluster;
pub(crate) mod credentials;
pub(crate) mod exec;
pub(crate) mod files;
pub(crate) mod in_cluster;
#[allow(dead_code)] // ureq's glue, unused since the stream's wiring; removed next
pub(crate) mod keepalive;
pub(crate) mod kubeconfig;
#[allow(dead_code)] // ureq's glue, unused since the stream's wiring; removed next
pub(crate) mod mask;
pub(crate) mod pem;
pub(crate) mod proxy;
pub(crate) mod secret;
#[allow(dead_code)] // ureq's glue, unused since the stream's wiring; removed next
pub(crate) mod transport;
pub(crate) mod url;
mod yaml;
