//go:build cgo

package tattler

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Config is what to watch and how to reach the cluster; Open passes it to
// the library as its JSON document (Config.JSON; tattler_config_keys() in
// tattler.h lists the keys). Zero values are left out, so the library's
// defaults apply (each field says its default; a test holds them equal to
// the library's); durations are sent as whole seconds, rounded up.
//
// Printing a Config (String, and every fmt verb) summarises it: only the
// fields set, pointers followed, Resume as its size; Token, Password, the
// password of a Proxy URL, the values of Exec.Env and Extra's "token" and
// "password" as REDACTED.
type Config struct {
	// Where the cluster is. Server is the apiserver URL, https://host:port.
	// Without it the library finds the cluster as kubectl does: Kubeconfig
	// (a path) and Context, InCluster (the pod's service account), or,
	// none of them set, $KUBECONFIG, ~/.kube/config, then in-cluster.
	Server     string
	Kubeconfig string
	Context    string
	// InCluster reaches the cluster as the pod's service account. Default
	// false.
	InCluster bool

	// The server's certificate: CAFile (a PEM path) or CAData (PEM text),
	// TLSServerName to check another name than Server's host.
	CAFile        string
	CAData        string
	TLSServerName string
	// Insecure checks nothing of the server's certificate (never beside a
	// CA). Default false.
	Insecure bool

	// One way to authenticate: Token or TokenFile (re-read as it rotates),
	// Username and Password, or Exec (a credential plugin, as kubectl's);
	// ClientCertFile and ClientKeyFile add a client certificate (not
	// beside Exec). Token and Password are never printed (see above).
	Token          string
	TokenFile      string
	Username       string
	Password       string
	Exec           *ExecConfig
	ClientCertFile string
	ClientKeyFile  string

	// Proxy is "env" (HTTPS_PROXY, HTTP_PROXY, ALL_PROXY and NO_PROXY, the
	// default), "none", or an HTTP CONNECT proxy URL
	// (http://[user:password@]host:port; its password is never printed).
	Proxy string

	// Resources are names such as "pods", "nodes", "rbac", "v1/pods" or
	// "apps/v1/deployments"; they take Namespace, LabelSelector,
	// FieldSelector and MetadataOnly.
	Resources []string
	// Specs are resources with a scope of their own, streamed beside
	// Resources; they take none of the fields above. A node agent:
	//
	//	Specs: []tattler.ResourceSpec{
	//		{Resource: "pods", FieldSelector: "spec.nodeName=" + node},
	//		{Resource: "nodes", FieldSelector: "metadata.name=" + node},
	//	}
	Specs         []ResourceSpec
	Namespace     string
	LabelSelector string
	FieldSelector string
	// Shard streams, of every resource without a shard of its own, only
	// this shard's objects: run Count readers, each with its own Index.
	// Nil: every object.
	Shard *Shard
	// MetadataOnly streams the Resources as PartialObjectMetadata: each
	// Entry.Object is {"kind":"PartialObjectMetadata","apiVersion":
	// "meta.k8s.io/v1","metadata":{...}}, without spec or status. It also
	// applies to the names given to SetResources later. Default false.
	MetadataOnly bool

	// Scrub replaces container env values with REDACTED (nil: the
	// library's default). Default true.
	Scrub *bool
	// ScrubSecretData replaces the values of Secrets with REDACTED.
	// Default true.
	ScrubSecretData *bool
	// DropManagedFields removes metadata.managedFields. Default false.
	DropManagedFields *bool
	// EventKinds keeps, of Event resources, only the events about objects
	// of these kinds ("Pod", "Node"); nil: every event.
	EventKinds []string

	// ChannelCapacity is how many entries the library's channel holds
	// before the streams wait (none is dropped). Default 64.
	ChannelCapacity int
	// PageSize is how many objects a page asks for when the server has no
	// watch-list and paged LIST is used. Default 500.
	PageSize int
	// MaxFrameBytes is the largest object; a larger one is reported as an
	// Error entry and skipped. Default 64 MiB.
	MaxFrameBytes int
	// MaxBufferedBytes is how many bytes of objects wait for the consumer
	// before the streams wait. Default 64 MiB.
	MaxBufferedBytes int
	// Gzip asks the server for gzip-compressed bodies (it costs the
	// apiserver CPU and saves bandwidth only off-host). Default false.
	Gzip bool

	// IdleTimeout: a stream that receives no byte this long is
	// reconnected. Default 2m30s.
	IdleTimeout time.Duration
	// ConnectTimeout limits reaching the server, in total (not per read):
	// the TCP connect, over the host's addresses as Go's dialer tries
	// them, and a proxy's answer (CONNECT, or the SOCKS5 negotiation)
	// within the same time; the TLS handshake then has as long again.
	// Default 5s (0 here keeps the default; the C and JSON setting's 0,
	// no limit of tattler's own on the TCP connect, is not offered). Close
	// ends every phase at once (a TCP connect within 0.1s on Linux;
	// elsewhere it runs to its end, bounded by this), so this does not
	// bound how long Close takes.
	ConnectTimeout time.Duration
	// InitialEventsTimeout is the silence during a watch-list's initial
	// state after which a stream falls back to LIST + WATCH. Default 30s.
	InitialEventsTimeout time.Duration
	// RelistInterval is how often a fresh sync runs, unchanged objects as
	// Snapshot (1 minute to 7 days). Default 0s: never.
	RelistInterval time.Duration
	// DiscoveryInterval is how often wildcards ("*", "*.apps") look for
	// resources established or deleted meanwhile. Default 5m0s.
	DiscoveryInterval time.Duration

	// Extra holds further keys of the library's JSON configuration, merged
	// in as they are: an escape hatch for keys newer than this package. A
	// key a field above also sets is refused (ErrInvalidConfig).
	Extra map[string]any
	// LeaderElection, when set, streams only while this Reader holds a
	// coordination.k8s.io/v1 Lease shared with the other replicas: the
	// Reader sends ChangeFollowing, and ChangeLeading once it holds the
	// Lease and starts its streams (see docs/agents.md, "Collectors").
	LeaderElection *LeaderElection
	// CheckpointInCluster, with LeaderElection, keeps the leader's
	// checkpoint in a ConfigMap; a new leader resumes from it.
	CheckpointInCluster *InClusterCheckpoint

	// Resume is a checkpoint of an earlier Reader (Reader.Checkpoint, kept
	// across a restart): each resource it holds with the same scope starts
	// from it, with Synced at once and then only what changed meanwhile
	// (see tattler_open_config). Nil: a full sync.
	Resume []byte
}

// LeaderElection is a Lease in Namespace named Lease, shared by the
// replicas as client-go's leaderelection shares it. Zero durations are the
// library's defaults (client-go's): 15s, 10s, 2s.
type LeaderElection struct {
	Namespace string
	Lease     string
	// Identity is this replica's name in the Lease; "": $POD_NAME (else
	// the host name), "_" and a random suffix of this reader's.
	Identity string
	// LeaseDuration: how long a standby waits, after it last saw the
	// Lease change, before taking it.
	LeaseDuration time.Duration
	// RenewDeadline: a holder that has not renewed for this long stops
	// delivering (less than LeaseDuration).
	RenewDeadline time.Duration
	// RetryPeriod: how often the holder renews and a standby looks.
	RetryPeriod time.Duration
	// Shards: 0 or 1, one Lease for all resources; N, the resources split
	// into N shards by uid, each a Lease of its own ("Lease-i") that the
	// replicas share out.
	Shards uint32
}

// InClusterCheckpoint is the ConfigMap Namespace/Name holding the leader's
// checkpoint, written every Interval (0: 30s) and on Close.
type InClusterCheckpoint struct {
	Namespace string
	Name      string
	Interval  time.Duration
}

// ExecConfig runs a credential plugin for the token, as a kubeconfig's
// user.exec does (client.authentication.k8s.io ExecCredential).
type ExecConfig struct {
	Command string
	Args    []string
	// Env is added to the plugin's environment. Its values are never
	// printed (%v of an ExecConfig shows REDACTED).
	Env map[string]string
	// APIVersion is the ExecCredential version, e.g.
	// "client.authentication.k8s.io/v1".
	APIVersion string
	// InstallHint is shown when Command cannot be found.
	InstallHint string
	// Timeout bounds one run of the plugin (whole seconds, at least 1).
	Timeout time.Duration
}

// ResourceSpec is one resource with its own scope: an object of the
// configuration's "resources" (see tattler_set_resources in tattler.h).
type ResourceSpec struct {
	// Resource is a name as in Config.Resources ("pods", "apps/v1/deployments").
	Resource string `json:"resource"`
	// Namespace, or Namespaces (one stream each, entries of one resource);
	// neither watches every namespace.
	Namespace     string   `json:"namespace,omitempty"`
	Namespaces    []string `json:"namespaces,omitempty"`
	LabelSelector string   `json:"label_selector,omitempty"`
	FieldSelector string   `json:"field_selector,omitempty"`
	// MetadataOnly streams the objects as PartialObjectMetadata (only
	// their metadata).
	MetadataOnly bool `json:"metadata_only,omitempty"`
	// Encoding is "auto" (empty: protobuf on the wire where it applies,
	// metadata-only streams and the built-in kinds, JSON out either way) or
	// "json".
	Encoding string `json:"encoding,omitempty"`
	// Shard streams only this shard's objects (nil: Config.Shard).
	Shard *Shard `json:"shard,omitempty"`
}

// Shard is shard Index (from 0) of Count (1 to 1024): the objects whose
// uid hashes (FNV-1a 64) into the Index-th of Count equal ranges of the
// hash space, as the apiserver's shardSelector places them. The library
// asks the server for the range (ShardedListAndWatch) and drops any other
// object it is sent.
type Shard struct {
	Count int `json:"count"`
	Index int `json:"index"`
}

// String is "Index/Count".
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// nameScope is what names take when the Go side must spell it out: with
// MetadataOnly, each name becomes an object carrying the top-level scope
// (the library's names take namespace and selectors, but no metadata_only).
type nameScope struct {
	namespace, labelSelector, fieldSelector string
	metadataOnly                            bool
}

// resourceList is the JSON array of names and objects the library reads.
func resourceList(names []string, specs []ResourceSpec, scope nameScope) []any {
	list := make([]any, 0, len(names)+len(specs))
	for _, n := range names {
		if !scope.metadataOnly {
			list = append(list, n)
			continue
		}
		list = append(list, ResourceSpec{Resource: n, Namespace: scope.namespace,
			LabelSelector: scope.labelSelector, FieldSelector: scope.fieldSelector, MetadataOnly: true})
	}
	for _, s := range specs {
		list = append(list, s)
	}
	return list
}

func (c Config) scope() nameScope {
	return nameScope{c.Namespace, c.LabelSelector, c.FieldSelector, c.MetadataOnly}
}

// seconds is d in whole seconds, rounded up; an error names the field when
// d is negative.
func seconds(field string, d time.Duration) (int64, error) {
	if d < 0 {
		return 0, configError("%s is negative (%v)", field, d)
	}
	return int64((d + time.Second - 1) / time.Second), nil
}

// document is the configuration as the library's JSON keys, Extra left out.
func (c Config) document() (map[string]any, error) {
	m := map[string]any{}
	text := func(key, v string) {
		if v != "" {
			m[key] = v
		}
	}
	flag := func(key string, v bool) {
		if v {
			m[key] = true
		}
	}
	optional := func(key string, v *bool) {
		if v != nil {
			m[key] = *v
		}
	}
	count := func(key string, v int) {
		if v != 0 {
			m[key] = v
		}
	}
	var err error
	duration := func(field, key string, d time.Duration) {
		if s, e := seconds(field, d); e != nil {
			err = e
		} else if s != 0 {
			m[key] = s
		}
	}
	text("server", c.Server)
	text("kubeconfig", c.Kubeconfig)
	text("context", c.Context)
	flag("in_cluster", c.InCluster)
	text("ca_file", c.CAFile)
	text("ca_data", c.CAData)
	text("tls_server_name", c.TLSServerName)
	flag("insecure", c.Insecure)
	text("token", c.Token)
	text("token_file", c.TokenFile)
	text("username", c.Username)
	text("password", c.Password)
	text("client_cert_file", c.ClientCertFile)
	text("client_key_file", c.ClientKeyFile)
	if c.Exec != nil {
		exec, e := c.Exec.document()
		if e != nil {
			return nil, e
		}
		m["exec"] = exec
	}
	text("proxy", c.Proxy)
	text("namespace", c.Namespace)
	text("label_selector", c.LabelSelector)
	text("field_selector", c.FieldSelector)
	if len(c.Resources) > 0 || len(c.Specs) > 0 {
		m["resources"] = resourceList(c.Resources, c.Specs, c.scope())
	}
	optional("scrub", c.Scrub)
	optional("scrub_secret_data", c.ScrubSecretData)
	optional("drop_managed_fields", c.DropManagedFields)
	if c.EventKinds != nil {
		m["event_kinds"] = c.EventKinds
	}
	if c.Shard != nil {
		m["shard"] = *c.Shard
	}
	count("channel_capacity", c.ChannelCapacity)
	count("page_size", c.PageSize)
	count("max_frame_bytes", c.MaxFrameBytes)
	count("max_buffered_bytes", c.MaxBufferedBytes)
	flag("gzip", c.Gzip)
	duration("IdleTimeout", "idle_timeout_secs", c.IdleTimeout)
	duration("ConnectTimeout", "connect_timeout_secs", c.ConnectTimeout)
	duration("InitialEventsTimeout", "initial_events_timeout_secs", c.InitialEventsTimeout)
	duration("DiscoveryInterval", "discovery_interval_secs", c.DiscoveryInterval)
	duration("RelistInterval", "relist_interval_secs", c.RelistInterval)
	if e := c.LeaderElection; e != nil {
		doc := map[string]any{"namespace": e.Namespace, "lease": e.Lease}
		if e.Identity != "" {
			doc["identity"] = e.Identity
		}
		if e.Shards > 1 {
			doc["shards"] = e.Shards
		}
		for _, d := range []struct {
			field, key string
			v          time.Duration
		}{
			{"LeaderElection.LeaseDuration", "lease_duration_secs", e.LeaseDuration},
			{"LeaderElection.RenewDeadline", "renew_deadline_secs", e.RenewDeadline},
			{"LeaderElection.RetryPeriod", "retry_period_secs", e.RetryPeriod},
		} {
			if s, e := seconds(d.field, d.v); e != nil {
				err = e
			} else if s != 0 {
				doc[d.key] = s
			}
		}
		m["leader_election"] = doc
	}
	if k := c.CheckpointInCluster; k != nil {
		doc := map[string]any{"namespace": k.Namespace, "name": k.Name}
		if s, e := seconds("CheckpointInCluster.Interval", k.Interval); e != nil {
			err = e
		} else if s != 0 {
			doc["interval_secs"] = s
		}
		m["checkpoint_in_cluster"] = doc
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

func (e ExecConfig) document() (map[string]any, error) {
	m := map[string]any{"command": e.Command}
	if e.Args != nil {
		m["args"] = e.Args
	}
	if e.Env != nil {
		m["env"] = e.Env
	}
	if e.APIVersion != "" {
		m["api_version"] = e.APIVersion
	}
	if e.InstallHint != "" {
		m["install_hint"] = e.InstallHint
	}
	s, err := seconds("Exec.Timeout", e.Timeout)
	if err != nil {
		return nil, err
	}
	if s != 0 {
		m["timeout_secs"] = s
	}
	return m, nil
}

// aliases are the keys the library reads under two names.
var aliases = map[string]string{"insecure_skip_tls_verify": "insecure"}

// JSON is the configuration as the library reads it: the fields, then
// Extra's keys. A key set both by a field and in Extra is an error
// (ErrInvalidConfig), as is a negative duration.
func (c Config) JSON() (string, error) {
	m, err := c.document()
	if err != nil {
		return "", err
	}
	for k, v := range c.Extra {
		key := k
		if a, ok := aliases[k]; ok {
			key = a
		}
		if _, set := m[key]; set || (key == "metadata_only" && c.MetadataOnly) {
			return "", configError("%q is set both by a field of Config and in Extra", k)
		}
		m[k] = v
	}
	if _, ok := m["resources"]; !ok {
		m["resources"] = []any{} // the library names what is missing
	}
	b, err := json.Marshal(m)
	return string(b), err
}

const redacted = "REDACTED"

// String summarises c on one line, secrets REDACTED (see Config):
//
//	tattler.Config{Server:"https://10.0.0.1:6443", Token:REDACTED, Resources:["pods"], Scrub:false, Resume:1843 bytes}
func (c Config) String() string {
	var b strings.Builder
	b.WriteString("tattler.Config{")
	n := 0
	field := func(name, value string) {
		if n > 0 {
			b.WriteString(", ")
		}
		n++
		b.WriteString(name)
		b.WriteByte(':')
		b.WriteString(value)
	}
	text := func(name, v string) {
		if v != "" {
			field(name, strconv.Quote(v))
		}
	}
	secret := func(name, v string) {
		if v != "" {
			field(name, redacted)
		}
	}
	flag := func(name string, v bool) {
		if v {
			field(name, "true")
		}
	}
	optional := func(name string, v *bool) {
		if v != nil {
			field(name, strconv.FormatBool(*v))
		}
	}
	count := func(name string, v int) {
		if v != 0 {
			field(name, strconv.Itoa(v))
		}
	}
	duration := func(name string, d time.Duration) {
		if d != 0 {
			field(name, d.String())
		}
	}
	text("Server", c.Server)
	text("Kubeconfig", c.Kubeconfig)
	text("Context", c.Context)
	flag("InCluster", c.InCluster)
	text("CAFile", c.CAFile)
	if c.CAData != "" {
		field("CAData", fmt.Sprintf("%d bytes", len(c.CAData)))
	}
	text("TLSServerName", c.TLSServerName)
	flag("Insecure", c.Insecure)
	secret("Token", c.Token)
	text("TokenFile", c.TokenFile)
	text("Username", c.Username)
	secret("Password", c.Password)
	if c.Exec != nil {
		field("Exec", c.Exec.summary())
	}
	text("ClientCertFile", c.ClientCertFile)
	text("ClientKeyFile", c.ClientKeyFile)
	text("Proxy", redactURL(c.Proxy))
	if c.Resources != nil {
		field("Resources", quoted(c.Resources))
	}
	if c.Specs != nil {
		specs := make([]string, len(c.Specs))
		for i, s := range c.Specs {
			specs[i] = fmt.Sprintf("%+v", s)
		}
		field("Specs", "["+strings.Join(specs, " ")+"]")
	}
	text("Namespace", c.Namespace)
	text("LabelSelector", c.LabelSelector)
	text("FieldSelector", c.FieldSelector)
	if c.Shard != nil {
		field("Shard", c.Shard.String())
	}
	flag("MetadataOnly", c.MetadataOnly)
	optional("Scrub", c.Scrub)
	optional("ScrubSecretData", c.ScrubSecretData)
	optional("DropManagedFields", c.DropManagedFields)
	if c.EventKinds != nil {
		field("EventKinds", quoted(c.EventKinds))
	}
	count("ChannelCapacity", c.ChannelCapacity)
	count("PageSize", c.PageSize)
	count("MaxFrameBytes", c.MaxFrameBytes)
	count("MaxBufferedBytes", c.MaxBufferedBytes)
	flag("Gzip", c.Gzip)
	duration("IdleTimeout", c.IdleTimeout)
	duration("ConnectTimeout", c.ConnectTimeout)
	duration("InitialEventsTimeout", c.InitialEventsTimeout)
	duration("RelistInterval", c.RelistInterval)
	duration("DiscoveryInterval", c.DiscoveryInterval)
	if e := c.LeaderElection; e != nil {
		field("LeaderElection", fmt.Sprintf("%+v", *e))
	}
	if k := c.CheckpointInCluster; k != nil {
		field("CheckpointInCluster", fmt.Sprintf("%+v", *k))
	}
	if c.Extra != nil {
		keys := slices.Sorted(maps.Keys(c.Extra))
		extra := make([]string, len(keys))
		for i, k := range keys {
			v := fmt.Sprint(c.Extra[k])
			if k == "token" || k == "password" {
				v = redacted
			}
			extra[i] = k + ":" + v
		}
		field("Extra", "map["+strings.Join(extra, " ")+"]")
	}
	if c.Resume != nil {
		field("Resume", fmt.Sprintf("%d bytes", len(c.Resume)))
	}
	b.WriteByte('}')
	return b.String()
}

// GoString is String: %#v must not show secrets either.
func (c Config) GoString() string { return c.String() }

// Format prints String for every verb (%v, %+v, %#v, %s, %q, %d, ...),
// with the verb's width and flags: no verb reaches a field's raw value.
func (c Config) Format(f fmt.State, verb rune) { format(f, verb, c.String()) }

// String summarises e on one line, the values of Env REDACTED:
//
//	tattler.ExecConfig{Command:"aws", Args:["eks" "get-token"], Env:{AWS_PROFILE:REDACTED}}
func (e ExecConfig) String() string { return "tattler.ExecConfig" + e.summary() }

// GoString is String.
func (e ExecConfig) GoString() string { return e.String() }

// Format prints String for every verb.
func (e ExecConfig) Format(f fmt.State, verb rune) { format(f, verb, e.String()) }

// summary is ExecConfig's fields set, in braces.
func (e ExecConfig) summary() string {
	parts := []string{"Command:" + strconv.Quote(e.Command)}
	if e.Args != nil {
		parts = append(parts, "Args:"+quoted(e.Args))
	}
	if e.Env != nil {
		names := slices.Sorted(maps.Keys(e.Env))
		env := make([]string, len(names))
		for i, k := range names {
			env[i] = k + ":" + redacted
		}
		parts = append(parts, "Env:{"+strings.Join(env, " ")+"}")
	}
	if e.APIVersion != "" {
		parts = append(parts, "APIVersion:"+strconv.Quote(e.APIVersion))
	}
	if e.InstallHint != "" {
		parts = append(parts, "InstallHint:"+strconv.Quote(e.InstallHint))
	}
	if e.Timeout != 0 {
		parts = append(parts, "Timeout:"+e.Timeout.String())
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// format writes s as the verb would a string: %q quotes it, any other verb
// prints it as %s does, with the width and flags given.
func format(f fmt.State, verb rune, s string) {
	if verb != 'q' {
		verb = 's'
	}
	fmt.Fprintf(f, fmt.FormatString(f, verb), s)
}

// quoted is a list of strings as ["a" "b"].
func quoted(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, " ") + "]"
}

// redactURL is a proxy URL with its password REDACTED.
func redactURL(proxy string) string {
	if u, err := url.Parse(proxy); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), redacted)
			return u.String()
		}
	}
	return proxy
}
