package tattler

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/url"
	"strings"
	"time"
)

// Config is what to watch and how to reach the cluster; Open passes it to
// the library as its JSON document (Config.JSON; the keys are tattler_open's
// in tattler.h). Zero values are left out, so the library's defaults apply;
// durations are sent as whole seconds, rounded up.
//
// Printing a Config (%v, %+v, %#v, %s) shows Token, Password, the
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
	InCluster  bool

	// The server's certificate: CAFile (a PEM path) or CAData (PEM text),
	// TLSServerName to check another name than Server's host, or Insecure
	// to check nothing (never beside a CA).
	CAFile        string
	CAData        string
	TLSServerName string
	Insecure      bool

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
	// MetadataOnly streams the Resources as PartialObjectMetadata: each
	// Entry.Object is {"kind":"PartialObjectMetadata","apiVersion":
	// "meta.k8s.io/v1","metadata":{...}}, without spec or status. It also
	// applies to the names given to SetResources later.
	MetadataOnly bool

	// What is done to each object. Scrub (default on) replaces container
	// env values with REDACTED; ScrubSecretData (default on) the values of
	// Secrets; DropManagedFields (default off) removes
	// metadata.managedFields. EventKinds keeps, of Event resources, only
	// the events about objects of these kinds ("Pod", "Node").
	Scrub             *bool
	ScrubSecretData   *bool
	DropManagedFields *bool
	EventKinds        []string

	// Bounds: the entries the channel holds before the streams wait
	// (ChannelCapacity, 1024), the objects a page asks for when the server
	// has no watch-list and paged LIST is used (PageSize, 500), the largest
	// object, reported as an Error entry and skipped beyond (MaxFrameBytes),
	// and the bytes of objects queued in all before the streams wait
	// (MaxBufferedBytes), 64 MiB each.
	ChannelCapacity  int
	PageSize         int
	MaxFrameBytes    int
	MaxBufferedBytes int
	// Gzip asks the server for gzip-compressed bodies (off: it costs the
	// apiserver CPU and saves bandwidth only off-host).
	Gzip bool

	// Timeouts and pacing. IdleTimeout (150 s): a stream that receives no
	// byte this long is reconnected. ConnectTimeout (5 s): a TCP connect
	// (it also bounds how long Close can take). InitialEventsTimeout
	// (30 s): silence during a watch-list's initial state after which the
	// stream falls back to LIST + WATCH. RelistInterval (0: never; 1 minute
	// to 7 days): a fresh sync this often, unchanged objects as Snapshot.
	// DiscoveryInterval (5 minutes): how often wildcards ("*", "*.apps")
	// look for resources established or deleted meanwhile.
	IdleTimeout          time.Duration
	ConnectTimeout       time.Duration
	InitialEventsTimeout time.Duration
	RelistInterval       time.Duration
	DiscoveryInterval    time.Duration
	// Deprecated: use RelistInterval. Still honoured; set both only to
	// the same value.
	RelistIntervalSecs int

	// Extra holds further keys of the library's JSON configuration, merged
	// in as they are: an escape hatch for keys newer than this package. A
	// key a field above also sets is refused (ErrInvalidConfig).
	Extra map[string]any
	// Resume is a checkpoint of an earlier Reader (Reader.Checkpoint, kept
	// across a restart): each resource it holds with the same scope starts
	// from it, with Synced at once and then only what changed meanwhile
	// (see tattler_open_resume). Nil: a full sync.
	Resume []byte
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
}

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
	count("channel_capacity", c.ChannelCapacity)
	count("page_size", c.PageSize)
	count("max_frame_bytes", c.MaxFrameBytes)
	count("max_buffered_bytes", c.MaxBufferedBytes)
	flag("gzip", c.Gzip)
	duration("IdleTimeout", "idle_timeout_secs", c.IdleTimeout)
	duration("ConnectTimeout", "connect_timeout_secs", c.ConnectTimeout)
	duration("InitialEventsTimeout", "initial_events_timeout_secs", c.InitialEventsTimeout)
	duration("DiscoveryInterval", "discovery_interval_secs", c.DiscoveryInterval)
	relist := c.RelistInterval
	if c.RelistIntervalSecs != 0 {
		old := time.Duration(c.RelistIntervalSecs) * time.Second
		if relist != 0 && relist != old {
			return nil, configError("RelistInterval (%v) and RelistIntervalSecs (%d) disagree", relist, c.RelistIntervalSecs)
		}
		relist = old
	}
	duration("RelistInterval", "relist_interval_secs", relist)
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

// Format prints c with its secrets as REDACTED (see Config).
func (c Config) Format(f fmt.State, verb rune) {
	type config Config // without Format: fmt prints the fields
	if c.Token != "" {
		c.Token = redacted
	}
	if c.Password != "" {
		c.Password = redacted
	}
	if u, err := url.Parse(c.Proxy); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), redacted)
			c.Proxy = u.String()
		}
	}
	if c.Extra != nil {
		c.Extra = maps.Clone(c.Extra)
		for _, k := range []string{"token", "password"} {
			if _, ok := c.Extra[k]; ok {
				c.Extra[k] = redacted
			}
		}
	}
	s := fmt.Sprintf(fmt.FormatString(f, verb), config(c))
	io.WriteString(f, strings.Replace(s, "tattler.config{", "tattler.Config{", 1))
}

// Format prints e with the values of Env as REDACTED.
func (e ExecConfig) Format(f fmt.State, verb rune) {
	type execConfig ExecConfig
	if e.Env != nil {
		env := make(map[string]string, len(e.Env))
		for k := range e.Env {
			env[k] = redacted
		}
		e.Env = env
	}
	s := fmt.Sprintf(fmt.FormatString(f, verb), execConfig(e))
	io.WriteString(f, strings.Replace(s, "tattler.execConfig{", "tattler.ExecConfig{", 1))
}
