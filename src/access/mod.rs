//! How to reach the cluster: kubeconfig files and in-cluster service
//! accounts (`kubeconfig`, over the bounded `yaml` reader), the credentials
//! configured (`auth`) and had at run time (`credentials`), exec plugins
//! (`exec`), secrets that never print (`secret`), bounded file reads
//! (`files`), pure TLS checks (`pem`), URLs read as Go reads them (`url`), proxies and NO_PROXY (`proxy`), and
//! the HTTP agent with its TLS and TCP connectors (`transport`,
//! `keepalive`). Dependencies run one way, from the leaves (`secret`,
//! `files`, `pem`, `yaml`, `url`) up to `kubeconfig` and `transport`; `Config`'s
//! kubeconfig constructors live in `kubeconfig`, so `crate::config` knows
//! nothing of it.

pub(crate) mod auth;
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
pub(crate) mod url;
mod yaml;
