//! Cluster access against the real kube-apiserver (tests/k8s), where it can
//! produce the case: an X.509 v1 client certificate signed by the cluster's
//! own CA, as `openssl x509 -req` without an extensions file makes it. kubectl
//! accepts it; rustls cannot use it, so tattler must say so when the
//! kubeconfig is read (never panic in a stream), and the reissue the message
//! suggests must work.

use std::process::Command;
use std::time::Duration;

use crate::common::tls::{openssl_client_cert, TempDir};
use crate::common::until_synced;
use kube_tattler::{Access, Config, Reader};

use crate::fixture::{Cluster, SERIAL};

/// A kubeconfig for the cluster whose user is the client certificate `crt` / `key`.
fn kubeconfig(c: &Cluster, crt: &str, key: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: cert\nclusters:\n- name: real\n  cluster:\n    server: {}\n    certificate-authority: {}\nusers:\n- name: cert-user\n  user:\n    client-certificate: {crt}\n    client-key: {key}\ncontexts:\n- name: cert\n  context:\n    cluster: real\n    user: cert-user\n",
        c.env["K8S_SERVER"],
        c.dir.join("pki/ca.crt").display(),
    )
}

fn kubectl(kubeconfig: &str, args: &[&str]) -> (bool, String) {
    let out = Command::new(crate::fixture::bin_dir().join("kubectl"))
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output()
        .expect("kubectl");
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[test]
fn a_v1_client_certificate_kubectl_accepts_is_refused_clearly_and_its_v3_reissue_streams() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let c = Cluster::up(Duration::from_secs(240), &[]);
    let pki = c.dir.join("pki");
    let dir = TempDir::new("real-v1");
    let (ca, ca_key) = (pki.join("ca.crt"), pki.join("ca.key"));

    // v1, O=system:masters: kubectl lists namespaces with it.
    let (v1, _) = openssl_client_cert(dir.path(), &ca, &ca_key, "v1-admin", false);
    assert!(!v1.is_empty());
    let (crt, key) = (dir.file("v1.crt"), dir.file("v1.key"));
    let kc = dir.write("kubeconfig-v1", kubeconfig(&c, &crt, &key));
    let (ok, out) = kubectl(&kc, &["get", "namespaces", "-o", "name"]);
    assert!(ok && out.contains("namespace/default"), "kubectl: {out}");

    // tattler: one clear error when the kubeconfig is read, naming the file.
    let e = match Access::from_kubeconfig(Some(kc.as_ref()), None).map(Config::new) {
        Ok(_) => panic!("a v1 client certificate was accepted"),
        Err(e) => e.to_string(),
    };
    assert!(
        e.contains(&format!(
            "client certificate {crt} of user \"cert-user\" is an X.509 v1 certificate"
        )) && e.contains("kubectl accepts it")
            && e.contains("openssl x509 -req")
            && e.contains("-extfile"),
        "{e}"
    );

    // Reissued as the message says: tattler streams with it.
    openssl_client_cert(dir.path(), &ca, &ca_key, "v3-admin", true);
    let kc = dir.write(
        "kubeconfig-v3",
        kubeconfig(&c, &dir.file("v3.crt"), &dir.file("v3.key")),
    );
    let config = Access::from_kubeconfig(Some(kc.as_ref()), None)
        .map(Config::new)
        .unwrap()
        .watch(["namespaces"])
        .unwrap();
    let r = Reader::open(config).unwrap();
    let entries = until_synced(&r);
    assert!(
        entries.iter().any(|e| e == "Add default")
            && entries.last().map(String::as_str) == Some("Synced namespaces"),
        "{entries:?}"
    );
}
