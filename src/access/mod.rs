//! How to reach the cluster: [`cluster::Access`] (what a kubeconfig context
//! or a service account gives), kubeconfig files (`kubeconfig`: the model of
//! one file over the bounded `yaml` reader, and the merge and resolution
//! kubectl does) and in-cluster service accounts (`in_cluster`), the
//! credentials configured (`auth`) and had at run time (`credentials`), exec
//! plugins (`exec`), secrets that never print (`secret`), bounded file reads
//! (`files`), pure TLS checks (`pem`), whether a server's certificate is
//! trusted (`verify`), URLs read as Go reads them (`url`),
//! proxies and NO_PROXY (`proxy`), the way to the server (`transport`: TLS,
//! the loopback rule, a proxy's CONNECT or SOCKS5 negotiation (`socks`),
//! each phase within its deadline, over `dial`'s TCP connection, Go's
//! dialer's, with `keepalive`'s probes) and
//! tattler's own HTTP/1.1 client over it (`client`: one exchange at a time,
//! a kept-alive connection per stream, the slot that stops it), which
//! writes and reads every byte itself with `wire::http`, so that no library
//! sees a credential or a response byte. Dependencies run one way, from the
//! leaves (`url`, `files`, `pem`, `yaml`; `secret` over `url`) up to
//! `kubeconfig` and `client`; `Access`'s kubeconfig and in-cluster
//! constructors live in `kubeconfig` and `in_cluster`, so `cluster` knows
//! nothing of them.

pub(crate) mod auth;
pub(crate) mod client;
pub(crate) mod cluster;
pub(crate) mod credentials;
pub(crate) mod dial;
pub(crate) mod exec;
pub(crate) mod files;
mod go_base64;
pub(crate) mod in_cluster;
pub(crate) mod keepalive;
pub(crate) mod kubeconfig;
pub(crate) mod pem;
pub(crate) mod proxy;
pub(crate) mod reach;
pub(crate) mod secret;
pub(crate) mod socks;
pub(crate) mod transport;
pub(crate) mod url;
pub(crate) mod verify;
mod yaml;
