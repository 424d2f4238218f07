package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// The pods: what a Deployment with an Istio-style sidecar and a log shipper
// makes, applied with kubectl (so a last-applied-configuration annotation
// holds the manifest once more). About 8 KB is sent; the apiserver adds its
// defaults, uid, timestamps, status and the managedFields of the create, and
// serves about 15 KB of JSON per pod.

// rng is splitmix64, as bench/replay/src/pod.rs: pods differ, yet each is a
// pure function of its index.
type rng uint64

func (r *rng) next() uint64 {
	*r += 0x9e3779b97f4a7c15
	z := uint64(*r)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func (r *rng) below(n uint64) uint64 { return r.next() % n }

func (r *rng) hex(n int) string {
	var b strings.Builder
	for b.Len() < n {
		fmt.Fprintf(&b, "%016x", r.next())
	}
	return b.String()[:n]
}

const alnum = "bcdfghjklmnpqrstvwxz2456789"

func suffix(v uint64, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alnum[v%27]
		v /= 27
	}
	return string(b)
}

var (
	teams = []string{"payments", "checkout", "search", "ads", "identity", "catalog", "shipping", "billing", "messaging", "analytics"}
	envs  = []string{"prod", "staging", "canary", "dev", "perf"}
	apps  = []string{"api", "web", "worker", "gateway", "scheduler", "indexer", "cache", "ingest", "notifier", "reporter", "auth", "frontend"}
)

// Namespace k of 50: team × environment, as the replay server's.
func Namespace(k int) string { k %= 50; return teams[k%10] + "-" + envs[k/10] }

// Node is the node name pod i is bound to.
func Node(i, nodes int) string { return fmt.Sprintf("node-%03d", i%max(nodes, 1)) }

// A rendered pod: what is POSTed.
type Rendered struct {
	Namespace, Name string
	Body            []byte
}

func quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// Pod renders pod i.
func Pod(i, nodes int) Rendered {
	k := i % 50
	ns := Namespace(k)
	team, env := teams[k%10], envs[k/10]
	app := apps[(i/50)%len(apps)]
	rs := rng(uint64(i%600)<<8 | 0x5a)
	hash := suffix(rs.next(), 10)
	ver := fmt.Sprintf("v%d.%d.%d", 1+rs.below(3), rs.below(20), rs.below(10))
	cfgSum, secSum := rs.hex(64), rs.hex(64)
	u := rs.hex(32)
	rsUID := u[0:8] + "-" + u[8:12] + "-4" + u[13:16] + "-a" + u[17:20] + "-" + u[20:32]
	r := rng(uint64(i))
	name := fmt.Sprintf("%s-%s-%s", app, hash, suffix(uint64(i)*1_000_001%14_348_907, 5))
	node := Node(i, nodes)
	image := fmt.Sprintf("reg.example.com/%s/%s:%s", team, app, ver)
	token, dbPass, sessKey := r.hex(40), r.hex(24), r.hex(64)

	labels := fmt.Sprintf(`{"app.kubernetes.io/name":%q,"app.kubernetes.io/instance":"%s-%s","app.kubernetes.io/version":%q,`+
		`"app.kubernetes.io/component":"backend","app.kubernetes.io/part-of":%q,"app.kubernetes.io/managed-by":"kubectl",`+
		`"pod-template-hash":%q,"team":%q,"env":%q,"tier":"backend"}`,
		app, app, env, ver, team, hash, team, env)
	annotations := fmt.Sprintf(`"prometheus.io/scrape":"true","prometheus.io/port":"9090","prometheus.io/path":"/metrics",`+
		`"checksum/config":%q,"checksum/secrets":%q,"cluster-autoscaler.kubernetes.io/safe-to-evict":"true",`+
		`"kubectl.kubernetes.io/default-container":"app",`+
		`"kubernetes.io/change-cause":"kubectl apply --filename=deploy/%s.yaml --record=true"`,
		cfgSum, secSum, app)

	var s strings.Builder
	w := func(f string, a ...any) { fmt.Fprintf(&s, f, a...) }
	// Volumes.
	w(`{"volumes":[{"name":"config","configMap":{"name":"%s-config","defaultMode":420}},`, app)
	w(`{"name":"secrets","secret":{"secretName":"%s-secrets","defaultMode":288}},{"name":"tmp","emptyDir":{}},`, app)
	w(`{"name":"kube-api-access","projected":{"sources":[{"serviceAccountToken":{"expirationSeconds":3607,"path":"token"}},`)
	w(`{"configMap":{"name":"kube-root-ca.crt","items":[{"key":"ca.crt","path":"ca.crt"}]}}],"defaultMode":420}}],`)
	// A migration before the app.
	w(`"initContainers":[{"name":"migrate","image":%q,"command":["/app/migrate","--up"],`, image)
	w(`"env":[{"name":"DB_HOST","value":"postgres.%s.svc"},{"name":"DB_PASSWORD","value":%q}],`, ns, dbPass)
	w(`"resources":{"limits":{"memory":"128Mi"},"requests":{"cpu":"50m","memory":"64Mi"}}}],`)
	// The app.
	w(`"containers":[{"name":"app","image":%q,"args":["--config=/etc/config/config.yaml","--port=8080"],`, image)
	w(`"ports":[{"name":"http","containerPort":8080,"protocol":"TCP"},{"name":"metrics","containerPort":9090,"protocol":"TCP"}],`)
	w(`"env":[{"name":"LOG_LEVEL","value":"info"},{"name":"ENVIRONMENT","value":%q},{"name":"SERVICE_VERSION","value":%q},`, env, ver)
	w(`{"name":"DB_HOST","value":"postgres.%s.svc"},{"name":"DB_USER","value":%q},{"name":"DB_PASSWORD","value":%q},`, ns, app, dbPass)
	w(`{"name":"REDIS_URL","value":"redis://redis.%s.svc:6379/0"},{"name":"API_TOKEN","value":%q},{"name":"SESSION_KEY","value":%q},`, ns, token, sessKey)
	w(`{"name":"POD_NAME","valueFrom":{"fieldRef":{"apiVersion":"v1","fieldPath":"metadata.name"}}},`)
	w(`{"name":"NODE_NAME","valueFrom":{"fieldRef":{"apiVersion":"v1","fieldPath":"spec.nodeName"}}},`)
	w(`{"name":"STRIPE_KEY","valueFrom":{"secretKeyRef":{"name":"%s-secrets","key":"stripe-key"}}}],`, app)
	w(`"resources":{"limits":{"cpu":"2","memory":"1Gi"},"requests":{"cpu":"500m","memory":"512Mi"}},`)
	w(`"volumeMounts":[{"name":"config","mountPath":"/etc/config","readOnly":true},{"name":"secrets","mountPath":"/etc/secrets","readOnly":true},{"name":"tmp","mountPath":"/tmp"},{"name":"kube-api-access","mountPath":"/var/run/secrets/kubernetes.io/serviceaccount","readOnly":true}],`)
	w(`"livenessProbe":{"httpGet":{"path":"/healthz","port":8080},"periodSeconds":10},"readinessProbe":{"httpGet":{"path":"/readyz","port":8080},"periodSeconds":5},`)
	w(`"securityContext":{"runAsUser":10001,"readOnlyRootFilesystem":true,"allowPrivilegeEscalation":false}},`)
	// A proxy sidecar.
	w(`{"name":"proxy","image":"docker.io/envoyproxy/envoy:v1.31.0","args":["-c","/etc/envoy/envoy.yaml","--log-level","warn"],`)
	w(`"ports":[{"name":"admin","containerPort":15000,"protocol":"TCP"}],`)
	w(`"env":[{"name":"SERVICE","value":%q},{"name":"POD_IP","valueFrom":{"fieldRef":{"apiVersion":"v1","fieldPath":"status.podIP"}}}],`, app)
	w(`"resources":{"limits":{"memory":"256Mi"},"requests":{"cpu":"100m","memory":"128Mi"}},`)
	w(`"volumeMounts":[{"name":"config","mountPath":"/etc/envoy","readOnly":true}]},`)
	// A log shipper.
	w(`{"name":"log-shipper","image":"docker.io/fluent/fluent-bit:3.1.4","env":[{"name":"LOKI_PASSWORD","value":%q}],`, r.hex(32))
	w(`"resources":{"limits":{"memory":"64Mi"},"requests":{"cpu":"10m","memory":"32Mi"}},"volumeMounts":[{"name":"tmp","mountPath":"/tmp","readOnly":true}]}],`)
	// The pod.
	w(`"serviceAccountName":%q,"nodeName":%q,"terminationGracePeriodSeconds":45,"securityContext":{"runAsNonRoot":true,"fsGroup":2000},`, app, node)
	w(`"tolerations":[{"key":"dedicated","operator":"Equal","value":%q,"effect":"NoSchedule"}]}`, team)
	spec := s.String()

	meta := func(extra string) string {
		return fmt.Sprintf(`"metadata":{"name":%q,"namespace":%q,"labels":%s,"annotations":{%s%s}`, name, ns, labels, extra, annotations)
	}
	owner := fmt.Sprintf(`,"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"%s-%s","uid":%q,"controller":true,"blockOwnerDeletion":true}]`, app, hash, rsUID)
	manifest := `{"apiVersion":"v1","kind":"Pod",` + meta("") + `},"spec":` + spec + "}\n"
	body := `{"apiVersion":"v1","kind":"Pod",` + meta(`"kubectl.kubernetes.io/last-applied-configuration":`+quote(manifest)+",") + owner + `},"spec":` + spec + "}"
	return Rendered{Namespace: ns, Name: name, Body: []byte(body)}
}
