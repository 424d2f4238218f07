//! Synthetic but realistic pods, rendered as the JSON a kube-apiserver sends.
//!
//! Every pod is a pure function of its index (and of the resourceVersion and
//! live-event timestamp it is rendered with), so the server can render an
//! index again for a MODIFIED event without storing anything per pod.

use std::fmt::Write as _;

/// splitmix64: small, fast, good enough to make the pods differ.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// A canonical version-4 UUID (8-4-4-4-12, lower-case hex).
    pub fn uuid(&mut self) -> String {
        let hi = (self.next() & 0xffff_ffff_ffff_0fff) | 0x4000;
        let lo = (self.next() & 0x3fff_ffff_ffff_ffff) | 0x8000_0000_0000_0000;
        let v = (u128::from(hi) << 64) | u128::from(lo);
        let h = format!("{v:032x}");
        format!(
            "{}-{}-{}-{}-{}",
            &h[0..8],
            &h[8..12],
            &h[12..16],
            &h[16..20],
            &h[20..32]
        )
    }

    pub fn hex(&mut self, n: usize) -> String {
        let mut s = String::with_capacity(n + 16);
        while s.len() < n {
            let _ = write!(s, "{:016x}", self.next());
        }
        s.truncate(n);
        s
    }
}

/// The alphabet Kubernetes uses for generated name suffixes.
const ALNUM: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

fn k8s_suffix(mut v: u64, len: usize) -> String {
    let mut s = String::with_capacity(len);
    for _ in 0..len {
        s.push(ALNUM[(v % 27) as usize] as char);
        v /= 27;
    }
    s
}

const TEAMS: [&str; 10] = [
    "payments",
    "checkout",
    "search",
    "ads",
    "identity",
    "catalog",
    "shipping",
    "billing",
    "messaging",
    "analytics",
];
const ENVS: [&str; 5] = ["prod", "staging", "canary", "dev", "perf"];
const APPS: [&str; 12] = [
    "api",
    "web",
    "worker",
    "gateway",
    "scheduler",
    "indexer",
    "cache",
    "ingest",
    "notifier",
    "reporter",
    "auth",
    "frontend",
];

/// The annotation a live MODIFIED event carries its send time in
/// (CLOCK_REALTIME, nanoseconds since the Unix epoch, 19 digits).
pub const SENT_ANNOTATION: &str = "bench.tattler.dev/sent-unix-nanos";

/// 50 namespaces: team × environment.
pub fn namespace(i: usize) -> String {
    let k = i % 50;
    format!("{}-{}", TEAMS[k % 10], ENVS[k / 10])
}

/// RFC 3339 UTC time of a Unix timestamp (seconds).
pub fn rfc3339(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Escapes `s` as the contents of a JSON string (no surrounding quotes).
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 4);
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// Where the live timestamp's 19 digits sit in a rendered body.
pub struct Rendered {
    pub body: String,
    pub stamp_at: Option<usize>,
}

/// Renders pod `i` without its `kind` and `apiVersion`: everything after
/// `{"kind":"Pod","apiVersion":"v1",` up to and including the closing brace,
/// i.e. `"metadata":{…},"spec":{…},"status":{…}}`. A watch event's object is
/// `{"kind":"Pod","apiVersion":"v1",` + body; a LIST item is `{` + body.
/// With `live`, the annotations carry a 19-digit zero placeholder for the
/// send time, to be overwritten just before the bytes are written.
pub fn render_body(i: usize, rv: u64, live: bool) -> Rendered {
    let ns = namespace(i);
    let k = i % 50;
    let team = TEAMS[k % 10];
    let env = ENVS[k / 10];
    let app = APPS[(i / 50) % APPS.len()];
    // The ReplicaSet: one per (namespace, app).
    let mut rs = Rng::new(((i % 600) as u64) << 8 | 0x5a);
    let hash = k8s_suffix(rs.next(), 10);
    let rs_uid = rs.uuid();
    let ver = format!("v{}.{}.{}", 1 + rs.below(3), rs.below(20), rs.below(10));
    // The pod itself; the suffix is a bijection of i, so names never collide.
    let mut r = Rng::new(i as u64);
    let suffix = k8s_suffix((i as u64).wrapping_mul(1_000_001) % 14_348_907, 5);
    let name = format!("{app}-{hash}-{suffix}");
    let uid = r.uuid();
    let created = 1_714_000_000 + r.below(20_000_000);
    let t0 = rfc3339(created);
    let t1 = rfc3339(created + 1 + r.below(5));
    let t2 = rfc3339(created + 6 + r.below(30));
    let node = format!("node-{:03}", r.below(200));
    let (ha, hb) = (r.below(250), 1 + r.below(250));
    let (pa, pb) = (r.below(250), 1 + r.below(250));
    let host_ip = format!("10.0.{ha}.{hb}");
    let pod_ip = format!("10.244.{pa}.{pb}");
    let token = r.hex(32);
    let img_digest = r.hex(64);
    let proxy_digest = r.hex(64);
    let cid0 = r.hex(64);
    let cid1 = r.hex(64);
    let restarts = if r.below(10) == 0 { r.below(5) } else { 0 };
    let image = format!("reg.example.com/{team}/{app}:{ver}");
    let db_host = format!("postgres.{ns}.svc.cluster.local");

    let applied = format!(
        concat!(
            r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"annotations":{{}},"#,
            r#""name":"{name}","namespace":"{ns}"}},"spec":{{"containers":[{{"env":[{{"name":"LOG_LEVEL","value":"info"}},"#,
            r#"{{"name":"API_TOKEN","value":"{token}"}}],"image":"{image}","name":"app"}}]}}}}"#,
            "\n"
        ),
        name = name,
        ns = ns,
        token = token,
        image = image,
    );

    let mut b = String::with_capacity(4600);
    let _ = write!(
        b,
        concat!(
            r#""metadata":{{"name":"{name}","generateName":"{app}-{hash}-","namespace":"{ns}","uid":"{uid}","#,
            r#""resourceVersion":"{rv}","creationTimestamp":"{t0}","#,
            r#""labels":{{"app.kubernetes.io/name":"{app}","app.kubernetes.io/instance":"{app}-{env}","#,
            r#""pod-template-hash":"{hash}","team":"{team}"}},"#,
            r#""annotations":{{"kubectl.kubernetes.io/last-applied-configuration":"{applied}""#
        ),
        name = name,
        app = app,
        hash = hash,
        ns = ns,
        uid = uid,
        rv = rv,
        t0 = t0,
        env = env,
        team = team,
        applied = escape(&applied),
    );
    let mut stamp_at = None;
    if live {
        let _ = write!(b, r#","{SENT_ANNOTATION}":""#);
        stamp_at = Some(b.len());
        b.push_str("0000000000000000000\"");
    }
    let _ = write!(
        b,
        concat!(
            r#"}},"ownerReferences":[{{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"{app}-{hash}","uid":"{rs_uid}","controller":true,"blockOwnerDeletion":true}}],"#,
            r#""managedFields":[{{"manager":"kube-controller-manager","operation":"Update","apiVersion":"v1","time":"{t0}","fieldsType":"FieldsV1","fieldsV1":"#,
            r#"{{"f:metadata":{{"f:generateName":{{}},"f:labels":{{".":{{}},"f:app.kubernetes.io/name":{{}},"f:pod-template-hash":{{}},"f:team":{{}}}},"#,
            r#""f:ownerReferences":{{".":{{}},"k:{{\"uid\":\"{rs_uid}\"}}":{{}}}}}},"#,
            r#""f:spec":{{"f:containers":{{"k:{{\"name\":\"app\"}}":{{".":{{}},"f:env":{{}},"f:image":{{}},"f:name":{{}},"f:resources":{{}}}},"#,
            r#""k:{{\"name\":\"proxy\"}}":{{}}}},"f:restartPolicy":{{}}}}}}}},"#,
            r#"{{"manager":"kubelet","operation":"Update","apiVersion":"v1","time":"{t2}","fieldsType":"FieldsV1","fieldsV1":"#,
            r#"{{"f:status":{{"f:conditions":{{}},"f:containerStatuses":{{}},"f:hostIP":{{}},"f:phase":{{}},"f:podIP":{{}},"f:startTime":{{}}}}}},"#,
            r#""subresource":"status"}}]}},"#
        ),
        app = app,
        hash = hash,
        rs_uid = rs_uid,
        t0 = t0,
        t2 = t2,
    );
    let _ = write!(
        b,
        concat!(
            r#""spec":{{"#,
            r#""containers":[{{"name":"app","image":"{image}","#,
            r#""env":[{{"name":"DB_HOST","value":"{db_host}"}},"#,
            r#"{{"name":"DB_PASSWORD","valueFrom":{{"secretKeyRef":{{"name":"{app}-db","key":"password"}}}}}},"#,
            r#"{{"name":"API_TOKEN","value":"{token}"}}],"#,
            r#""resources":{{"limits":{{"cpu":"1","memory":"512Mi"}},"requests":{{"cpu":"250m","memory":"256Mi"}}}},"#,
            r#""terminationMessagePath":"/dev/termination-log","imagePullPolicy":"IfNotPresent"}},"#,
            r#"{{"name":"proxy","image":"reg.example.com/envoy:v1.30.1","#,
            r#""env":[{{"name":"SERVICE","value":"{app}"}},{{"name":"NODE","valueFrom":{{"fieldRef":{{"fieldPath":"spec.nodeName"}}}}}}],"#,
            r#""resources":{{"limits":{{"memory":"128Mi"}},"requests":{{"cpu":"50m","memory":"64Mi"}}}},"#,
            r#""imagePullPolicy":"IfNotPresent"}}],"#,
            r#""restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","serviceAccountName":"default","automountServiceAccountToken":false,"#,
            r#""nodeName":"{node}","securityContext":{{}},"schedulerName":"default-scheduler","#,
            r#""tolerations":[{{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}}],"#,
            r#""priority":0,"enableServiceLinks":true}},"#
        ),
        image = image,
        db_host = db_host,
        app = app,
        token = token,
        node = node,
    );
    let _ = write!(
        b,
        concat!(
            r#""status":{{"phase":"Running","conditions":["#,
            r#"{{"type":"Initialized","status":"True","lastProbeTime":null,"lastTransitionTime":"{t0}"}},"#,
            r#"{{"type":"Ready","status":"True","lastProbeTime":null,"lastTransitionTime":"{t2}"}},"#,
            r#"{{"type":"ContainersReady","status":"True","lastProbeTime":null,"lastTransitionTime":"{t2}"}}],"#,
            r#""hostIP":"{host_ip}","podIP":"{pod_ip}","startTime":"{t0}","#,
            r#""containerStatuses":[{{"name":"app","state":{{"running":{{"startedAt":"{t1}"}}}},"ready":true,"restartCount":{restarts},"#,
            r#""image":"{image}","imageID":"reg.example.com/{team}/{app}@sha256:{img_digest}","#,
            r#""containerID":"containerd://{cid0}","started":true}},"#,
            r#"{{"name":"proxy","state":{{"running":{{"startedAt":"{t1}"}}}},"ready":true,"restartCount":0,"#,
            r#""image":"reg.example.com/envoy:v1.30.1","imageID":"reg.example.com/envoy@sha256:{proxy_digest}","#,
            r#""containerID":"containerd://{cid1}","started":true}}],"qosClass":"Burstable"}}}}"#
        ),
        t0 = t0,
        t1 = t1,
        t2 = t2,
        host_ip = host_ip,
        pod_ip = pod_ip,
        restarts = restarts,
        image = image,
        team = team,
        app = app,
        img_digest = img_digest,
        proxy_digest = proxy_digest,
        cid0 = cid0,
        cid1 = cid1,
    );
    Rendered { body: b, stamp_at }
}

/// The prefix of a watch event's object that a LIST item lacks.
pub const KIND_PREFIX: &str = r#"{"kind":"Pod","apiVersion":"v1","#;
