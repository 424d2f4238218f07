//! Realistic objects, and the demo churn.

use crate::server::Shared;
use crate::util::{self, Rng};
use crossbeam_channel::{Receiver, RecvTimeoutError};
use serde_json::{json, Value};
use std::time::Duration;

/// A Pod shaped like the captured ones (as `kubectl run` makes them), plus env vars.
pub(crate) fn pod(namespace: &str, name: &str) -> Value {
    let now = util::rfc3339_now();
    let mut rng = Rng::new();
    let volume = format!("kube-api-access-{}", rng.suffix(5));
    let container_key = format!("k:{{\"name\":\"{name}\"}}");
    json!({
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app": "tattler-demo", "run": name},
            "annotations": {"tattler.example/owner": "fakeapi", "kubernetes.io/config.source": "api"},
            "managedFields": [{
                "manager": "kubectl-run",
                "operation": "Update",
                "apiVersion": "v1",
                "time": now,
                "fieldsType": "FieldsV1",
                "fieldsV1": {
                    "f:metadata": {
                        "f:annotations": {".": {}, "f:kubernetes.io/config.source": {}, "f:tattler.example/owner": {}},
                        "f:labels": {".": {}, "f:app": {}, "f:run": {}}
                    },
                    "f:spec": {
                        "f:containers": {
                            container_key: {
                                ".": {},
                                "f:env": {
                                    ".": {},
                                    "k:{\"name\":\"DB_PASSWORD\"}": {".": {}, "f:name": {}, "f:valueFrom": {".": {}, "f:secretKeyRef": {}}},
                                    "k:{\"name\":\"LOG_LEVEL\"}": {".": {}, "f:name": {}, "f:value": {}}
                                },
                                "f:image": {},
                                "f:imagePullPolicy": {},
                                "f:name": {},
                                "f:resources": {},
                                "f:terminationMessagePath": {},
                                "f:terminationMessagePolicy": {}
                            }
                        },
                        "f:dnsPolicy": {},
                        "f:enableServiceLinks": {},
                        "f:restartPolicy": {},
                        "f:schedulerName": {},
                        "f:securityContext": {},
                        "f:terminationGracePeriodSeconds": {}
                    }
                }
            }]
        },
        "spec": {
            "volumes": [{
                "name": volume,
                "projected": {
                    "sources": [
                        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
                    ],
                    "defaultMode": 420
                }
            }],
            "containers": [{
                "name": name,
                "image": "registry.k8s.io/pause:3.10",
                "env": [
                    {"name": "LOG_LEVEL", "value": "info"},
                    {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db-credentials", "key": "password"}}}
                ],
                "resources": {},
                "volumeMounts": [{"name": volume, "readOnly": true, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "imagePullPolicy": "IfNotPresent"
            }],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "serviceAccount": "default",
            "securityContext": {},
            "schedulerName": "default-scheduler",
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            ],
            "priority": 0,
            "enableServiceLinks": true,
            "preemptionPolicy": "PreemptLowerPriority"
        },
        "status": {"phase": "Pending", "qosClass": "BestEffort"}
    })
}

/// `{"metadata":{"name":..,"namespace":..}}`.
pub(crate) fn object(namespace: Option<&str>, name: &str) -> Value {
    match namespace {
        Some(ns) => json!({"metadata": {"name": name, "namespace": ns}}),
        None => json!({"metadata": {"name": name}}),
    }
}

fn node(name: &str) -> Value {
    json!({
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64"
            }
        },
        "spec": {"podCIDR": "10.244.0.0/24"},
        "status": {
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status"}],
            "nodeInfo": {
                "machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": "6.8.0",
                "osImage": "Debian GNU/Linux 13", "containerRuntimeVersion": "containerd://2.1.0",
                "kubeletVersion": "v1.36.2", "kubeProxyVersion": "", "operatingSystem": "linux",
                "architecture": "amd64"
            }
        }
    })
}

fn configmap(namespace: &str, name: &str, n: u64) -> Value {
    json!({
        "metadata": {"name": name, "namespace": namespace},
        "data": {"log-level": "info", "revision": n.to_string()}
    })
}

fn try_apply(sh: &Shared, res: &str, obj: Value) {
    let mut st = sh.state.lock();
    if let Some(idx) = st.resolve(res) {
        if let Err(e) = st.apply(idx, obj) {
            log::warn!("fakeapi churn: {e}");
        }
    }
}

/// The demo loop: see `FakeApi::start_churn`.
pub(crate) fn churn(
    sh: &Shared,
    stop: &Receiver<()>,
    namespaces: usize,
    pods: usize,
    interval: Duration,
) {
    let mut rng = Rng::new();
    let ns_names: Vec<String> = (0..namespaces.max(1))
        .map(|i| format!("demo-{i}"))
        .collect();
    for i in 1..=3 {
        try_apply(sh, "nodes", node(&format!("node-{i}")));
    }
    for ns in &ns_names {
        try_apply(sh, "namespaces", object(None, ns));
        try_apply(sh, "configmaps", configmap(ns, "app-config", 1));
        try_apply(sh, "configmaps", configmap(ns, "feature-flags", 1));
    }
    let mut live: Vec<(String, String)> = Vec::new();
    let create = |rng: &mut Rng, live: &mut Vec<(String, String)>| {
        let ns = ns_names[rng.below(ns_names.len() as u64) as usize].clone();
        let name = format!("web-{}-{}", rng.suffix(8), rng.suffix(5));
        try_apply(sh, "pods", pod(&ns, &name));
        live.push((ns, name));
    };
    for _ in 0..pods {
        create(&mut rng, &mut live);
    }
    let mut tick: u64 = 0;
    loop {
        match stop.recv_timeout(interval) {
            Err(RecvTimeoutError::Timeout) => {}
            _ => return,
        }
        tick += 1;
        if pods == 0 {
            let ns = &ns_names[rng.below(ns_names.len() as u64) as usize];
            try_apply(sh, "configmaps", configmap(ns, "app-config", tick));
            continue;
        }
        let mut action = rng.below(10);
        if live.len() <= pods / 2 {
            action = 0;
        } else if live.len() > pods + pods / 2 {
            action = 9;
        }
        match action {
            0..=1 => create(&mut rng, &mut live),
            8..=9 => {
                let i = rng.below(live.len() as u64) as usize;
                let (ns, name) = live.swap_remove(i);
                let mut st = sh.state.lock();
                if let Some(idx) = st.resolve("pods") {
                    st.delete(idx, Some(&ns), &name);
                }
            }
            _ => {
                let (ns, name) = &live[rng.below(live.len() as u64) as usize];
                let mut st = sh.state.lock();
                let Some(idx) = st.resolve("pods") else {
                    continue;
                };
                let Some(cur) = st.resources[idx].objects.get(&format!("{ns}/{name}")) else {
                    continue;
                };
                let mut obj = (**cur).clone();
                if action < 5 {
                    obj["metadata"]["labels"]["version"] = json!(format!("v{}", tick % 7));
                } else {
                    obj["metadata"]["annotations"]["tattler.example/heartbeat"] =
                        json!(util::rfc3339_now());
                }
                if let Err(e) = st.apply(idx, obj) {
                    log::warn!("fakeapi churn: {e}");
                }
            }
        }
    }
}
