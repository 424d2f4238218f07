//! TLS provider measurement (bench/tls-providers/run.sh): `client N PORT CA` does N full TLS handshakes (no
//! resumption) with the provider chosen by feature and prints its CPU time;
//! `server PORT CERT KEY` (aws feature) serves handshakes forever.
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Instant;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

fn provider() -> CryptoProvider {
    #[cfg(feature = "ring")]
    return rustls::crypto::ring::default_provider();
    #[cfg(all(feature = "aws", not(feature = "ring")))]
    return rustls::crypto::aws_lc_rs::default_provider();
    #[cfg(feature = "rustcrypto")]
    return rustls_rustcrypto::provider();
    #[cfg(feature = "graviola")]
    return rustls_graviola::default_provider();
}

fn cpu() -> f64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap();
    let f: Vec<&str> = s.rsplit_once(')').unwrap().1.split_whitespace().collect();
    (f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap()) / 100.0
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    match a[1].as_str() {
        #[cfg(feature = "server")]
        "server" => {
            let certs: Vec<CertificateDer> = CertificateDer::pem_file_iter(&a[3]).unwrap().map(|c| c.unwrap()).collect();
            let key = PrivateKeyDer::from_pem_file(&a[4]).unwrap();
            let cfg = Arc::new(
                rustls::ServerConfig::builder_with_provider(Arc::new({
                    // Go's order (a Go apiserver's), not aws-lc-rs's server default (P-384 before X25519).
                    use rustls::crypto::aws_lc_rs::kx_group::*;
                    let mut p = rustls::crypto::aws_lc_rs::default_provider();
                    p.kx_groups = vec![X25519MLKEM768, X25519, SECP256R1, SECP384R1];
                    p
                }))
                    .with_safe_default_protocol_versions().unwrap()
                    .with_no_client_auth().with_single_cert(certs, key).unwrap(),
            );
            let l = TcpListener::bind(("127.0.0.1", a[2].parse::<u16>().unwrap())).unwrap();
            for s in l.incoming() {
                let Ok(mut s) = s else { continue };
                let cfg = cfg.clone();
                std::thread::spawn(move || {
                    let mut c = rustls::ServerConnection::new(cfg).unwrap();
                    while c.is_handshaking() {
                        if c.complete_io(&mut s).is_err() { return; }
                    }
                    let _ = c.complete_io(&mut s);
                    let mut b = [0u8; 1];
                    let _ = rustls::Stream::new(&mut c, &mut s).read(&mut b);
                });
            }
        }
        "client" => {
            let n: usize = a[2].parse().unwrap();
            let port: u16 = a[3].parse().unwrap();
            let mut roots = rustls::RootCertStore::empty();
            for c in CertificateDer::pem_file_iter(&a[4]).unwrap() { roots.add(c.unwrap()).unwrap(); }
            // Go's order of key exchanges, of those the provider has (tattler's configuration).
            let mut p = provider();
            let order = [rustls::NamedGroup::X25519MLKEM768, rustls::NamedGroup::X25519, rustls::NamedGroup::secp256r1, rustls::NamedGroup::secp384r1];
            p.kx_groups = order.iter().filter_map(|n| p.kx_groups.iter().copied().find(|g| g.name() == *n)).collect();
            let mut cfg = rustls::ClientConfig::builder_with_provider(Arc::new(p))
                .with_safe_default_protocol_versions().unwrap()
                .with_root_certificates(roots).with_no_client_auth();
            cfg.resumption = rustls::client::Resumption::disabled();
            let cfg = Arc::new(cfg);
            let name = ServerName::try_from("localhost").unwrap();
            let (c0, t0) = (cpu(), Instant::now());
            let mut group = None;
            for _ in 0..n {
                let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
                s.set_nodelay(true).unwrap();
                let mut c = rustls::ClientConnection::new(cfg.clone(), name.clone()).unwrap();
                while c.is_handshaking() { c.complete_io(&mut s).unwrap(); }
                group = c.negotiated_key_exchange_group().map(|g| g.name());
                rustls::Stream::new(&mut c, &mut s).write_all(b"x").unwrap();
            }
            let (c1, t1) = (cpu(), t0.elapsed());
            println!("{n} handshakes: client CPU {:.3} s ({:.0} us each), wall {:.2} s, group {group:?}",
                c1 - c0, (c1 - c0) * 1e6 / n as f64, t1.as_secs_f64());
        }
        _ => panic!("client|server"),
    }
}
