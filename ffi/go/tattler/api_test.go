//go:build cgo

package tattler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestConstantsAreTheHeaders(t *testing.T) {
	for _, c := range cConstants() {
		if c.goVal != c.cValue {
			t.Errorf("%s = %d, the header says %d", c.name, c.goVal, c.cValue)
		}
	}
}

func TestChangeNames(t *testing.T) {
	names := map[Change]string{ChangeAdd: "Add", ChangeUpdate: "Update", ChangeDelete: "Delete",
		ChangeSnapshot: "Snapshot", ChangeSynced: "Synced", ChangeError: "Error", ChangeStale: "Stale",
		ChangeLeading: "Leading", ChangeFollowing: "Following", Change(10): "Change(10)"}
	for c, want := range names {
		if c.String() != want {
			t.Errorf("%d: %q, want %q", int(c), c.String(), want)
		}
	}
	// The library's names are the same; a change newer than this package
	// (the library may add one) prints as a number, not a panic.
	for c := ChangeAdd; c <= ChangeFollowing; c++ {
		if c.String() != changeName(c) {
			t.Errorf("%d: %q, the library says %q", int(c), c, changeName(c))
		}
	}
	if Change(10).String() != "Change(10)" || changeName(10) != "Unknown" {
		t.Errorf("an unknown change: %q, the library %q", Change(10), changeName(10))
	}
	if LogWarn.String() != "WARN" || LogLevel(9).String() != "LogLevel(9)" {
		t.Errorf("log levels: %v %v", LogWarn, LogLevel(9))
	}
}

func TestErrorType(t *testing.T) {
	_, err := OpenJSON(`{"server":"http://127.0.0.1:1","resources":["pods"],"bogus":1}`)
	var te *Error
	if !errors.As(err, &te) || te.Status != StatusInvalidConfig || !strings.Contains(te.Message, "`bogus`") {
		t.Fatalf("errors.As(%v): %+v", err, te)
	}
	wrapped := fmt.Errorf("agent: %w", err)
	if !errors.Is(wrapped, ErrInvalidConfig) || errors.Is(wrapped, ErrIO) {
		t.Errorf("errors.Is through a wrap: %v", wrapped)
	}
	h := &Error{Status: StatusInvalidHandle}
	if !errors.Is(h, ErrInvalidHandle) || errors.Is(h, ErrClosed) || h.Error() != "tattler: "+StatusInvalidHandle.String() {
		t.Errorf("invalid handle: %v", h)
	}
	if StatusInvalidHandle.String() == StatusOther.String() {
		t.Errorf("the library has no text for 113: %q", StatusInvalidHandle)
	}
}

// full is a Config with every field set, none to its zero value.
func full() Config {
	yes, no := true, false
	return Config{
		Server: "https://10.0.0.1:6443", Kubeconfig: "/kc", Context: "ctx", InCluster: true,
		CAFile: "/ca", CAData: "PEM", TLSServerName: "kubernetes", Insecure: true,
		Token: "tok-s3cret", TokenFile: "/tok", Username: "u", Password: "pw-s3cret",
		Exec: &ExecConfig{Command: "plugin", Args: []string{"a"}, Env: map[string]string{"K": "env-s3cret"},
			APIVersion: "client.authentication.k8s.io/v1", InstallHint: "install it", Timeout: 1500 * time.Millisecond},
		ClientCertFile: "/cert", ClientKeyFile: "/key", Proxy: "none",
		Resources: []string{"pods"}, Specs: []ResourceSpec{{Resource: "nodes", FieldSelector: "metadata.name=n", Shard: &Shard{Count: 3, Index: 0}}},
		Shard: &Shard{Count: 2, Index: 1}, Namespace: "ns", LabelSelector: "app=x", FieldSelector: "f=y",
		Scrub: &no, ScrubSecretData: &no, DropManagedFields: &yes, EventKinds: []string{"Pod"},
		ChannelCapacity: 8, PageSize: 50, MaxFrameBytes: 1 << 20, MaxBufferedBytes: 2 << 20, Gzip: true,
		IdleTimeout: time.Minute, ConnectTimeout: 2 * time.Second, InitialEventsTimeout: 10 * time.Second,
		RelistInterval: time.Hour, DiscoveryInterval: 30 * time.Second,
		LeaderElection: &LeaderElection{Namespace: "ns", Lease: "l", Identity: "me", LeaseDuration: 30 * time.Second,
			RenewDeadline: 20 * time.Second, RetryPeriod: 4 * time.Second},
		CheckpointInCluster: &InClusterCheckpoint{Namespace: "ns", Name: "cp", Interval: time.Minute},
	}
}

func document(t *testing.T, c Config) map[string]any {
	t.Helper()
	js, err := c.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(js), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestConfigJSONHasEveryKey(t *testing.T) {
	got := document(t, full())
	want := `{"ca_data":"PEM","ca_file":"/ca","channel_capacity":8,"client_cert_file":"/cert","client_key_file":"/key",` +
		`"connect_timeout_secs":2,"context":"ctx","discovery_interval_secs":30,"drop_managed_fields":true,"event_kinds":["Pod"],` +
		`"exec":{"api_version":"client.authentication.k8s.io/v1","args":["a"],"command":"plugin","env":{"K":"env-s3cret"},"install_hint":"install it","timeout_secs":2},` +
		`"field_selector":"f=y","gzip":true,"idle_timeout_secs":60,"in_cluster":true,"initial_events_timeout_secs":10,"insecure":true,` +
		`"kubeconfig":"/kc","label_selector":"app=x",` +
		`"leader_election":{"namespace":"ns","lease":"l","identity":"me","lease_duration_secs":30,"renew_deadline_secs":20,"retry_period_secs":4},` +
		`"checkpoint_in_cluster":{"namespace":"ns","name":"cp","interval_secs":60},` +
		`"max_buffered_bytes":2097152,"max_frame_bytes":1048576,"namespace":"ns",` +
		`"page_size":50,"password":"pw-s3cret","proxy":"none","relist_interval_secs":3600,` +
		`"resources":["pods",{"resource":"nodes","field_selector":"metadata.name=n","shard":{"count":3,"index":0}}],"scrub":false,"scrub_secret_data":false,` +
		`"server":"https://10.0.0.1:6443","shard":{"count":2,"index":1},"tls_server_name":"kubernetes","token":"tok-s3cret","token_file":"/tok","username":"u"}`
	var w map[string]any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, w) {
		b, _ := json.Marshal(got)
		t.Fatalf("JSON:\n%s\nwant:\n%s", b, want)
	}

	// Every key the library reads has a field, and every field a key the
	// library reads: the library's list, tattler_config_keys().
	library := map[string]bool{}
	for k, about := range keysOfLibrary(t) {
		if about.AliasOf == "" {
			library[k] = true
		}
	}
	// metadata_only: spelt out per name (see nameScope).
	if !library["metadata_only"] {
		t.Error("the library no longer reads metadata_only")
	}
	delete(library, "metadata_only")
	for k := range got {
		if !library[k] {
			t.Errorf("the library does not read %s", k)
		}
		delete(library, k)
	}
	for k := range library {
		t.Errorf("the library reads %s: Config has no field for it", k)
	}
}

// aboutKey is one key of tattler_config_keys().
type aboutKey struct {
	Type    string `json:"type"`
	Default any    `json:"default"`
	AliasOf string `json:"alias_of"`
}

func keysOfLibrary(t *testing.T) map[string]aboutKey {
	t.Helper()
	var keys map[string]aboutKey
	d := json.NewDecoder(strings.NewReader(libraryKeys()))
	d.UseNumber() // 67108864, not 6.7108864e+07
	if err := d.Decode(&keys); err != nil {
		t.Fatalf("tattler_config_keys(): %v\n%s", err, libraryKeys())
	}
	return keys
}

// TestDocumentedDefaultsAreTheLibrarys reads Config's field comments
// ("... Default 64.") and compares each with the library's default for the
// key the field sets; every key with a default must have its field say it.
func TestDocumentedDefaultsAreTheLibrarys(t *testing.T) {
	file, err := parser.ParseFile(token.NewFileSet(), "config.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]string{} // field -> "64", "64 MiB", "2m30s", "true"
	ast.Inspect(file, func(n ast.Node) bool {
		spec, ok := n.(*ast.TypeSpec)
		if !ok || spec.Name.Name != "Config" {
			return true
		}
		for _, f := range spec.Type.(*ast.StructType).Fields.List {
			doc := strings.Join(strings.Fields(f.Doc.Text()), " ")
			m := regexp.MustCompile(`Default ([^.:]+)[.:]`).FindStringSubmatch(doc)
			for _, name := range f.Names {
				if m != nil {
					documented[name.Name] = strings.TrimSpace(m[1])
				}
			}
		}
		return false
	})
	if len(documented) == 0 {
		t.Fatal("no documented default found in config.go")
	}
	library := keysOfLibrary(t)
	seen := map[string]bool{}
	v := reflect.ValueOf(&Config{}).Elem()
	for i := 0; i < v.NumField(); i++ {
		name := v.Type().Field(i).Name
		// The key the field sets: the one its non-zero value adds.
		c := Config{}
		f := reflect.ValueOf(&c).Elem().Field(i)
		switch f.Kind() {
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int:
			f.SetInt(7)
		case reflect.Int64: // time.Duration
			f.SetInt(int64(7 * time.Second))
		case reflect.Pointer:
			if f.Type().Elem().Kind() != reflect.Bool {
				continue
			}
			yes := true
			f.Set(reflect.ValueOf(&yes))
		default:
			continue
		}
		doc, err := c.document()
		if err != nil || len(doc) != 1 {
			if name == "MetadataOnly" { // spelt out per name, no key of its own
				doc = map[string]any{"metadata_only": true}
			} else {
				t.Fatalf("%s: %v %v", name, doc, err)
			}
		}
		var key string
		for k := range doc {
			key = k
		}
		about, ok := library[key]
		if !ok || about.Default == nil {
			if said, ok := documented[name]; ok {
				t.Errorf("%s documents a default (%s), the library has none for %s", name, said, key)
			}
			continue
		}
		seen[key] = true
		said, ok := documented[name]
		if !ok {
			t.Errorf("%s does not document its default (the library's: %v)", name, about.Default)
			continue
		}
		want := fmt.Sprint(about.Default)
		var got string
		switch {
		case f.Kind() == reflect.Int64:
			d, err := time.ParseDuration(strings.Fields(said)[0])
			if err != nil {
				t.Errorf("%s: %q is not a duration", name, said)
				continue
			}
			got = fmt.Sprint(int64(d / time.Second))
		case strings.HasSuffix(said, " MiB"):
			n, _ := strconv.Atoi(strings.TrimSuffix(said, " MiB"))
			got = fmt.Sprint(n << 20)
		default:
			got = said
		}
		if got != want {
			t.Errorf("%s documents %q (%s), the library's %s is %s", name, said, got, key, want)
		}
	}
	for k, about := range library {
		if about.Default != nil && about.AliasOf == "" && !seen[k] {
			t.Errorf("the library's %s has a default (%v) no field documents", k, about.Default)
		}
	}
}

func TestConfigJSONZeroAndDurations(t *testing.T) {
	if got := document(t, Config{}); !reflect.DeepEqual(got, map[string]any{"resources": []any{}}) {
		t.Errorf("zero Config: %v", got)
	}
	got := document(t, Config{Resources: []string{"pods"}, IdleTimeout: 1500 * time.Millisecond, RelistInterval: 90 * time.Second})
	if got["idle_timeout_secs"] != 2.0 || got["relist_interval_secs"] != 90.0 {
		t.Errorf("durations: %v", got)
	}
	// Extra adds keys the fields do not set.
	got = document(t, Config{Resources: []string{"pods"}, Extra: map[string]any{"token": "t", "future_key": 1}})
	if got["token"] != "t" || got["future_key"] != 1.0 {
		t.Errorf("Extra: %v", got)
	}
	for name, c := range map[string]Config{
		"negative":     {ConnectTimeout: -time.Second},
		"exec":         {Exec: &ExecConfig{Command: "p", Timeout: -1}},
		"extra":        {Token: "t", Extra: map[string]any{"token": "u"}},
		"alias":        {Insecure: true, Extra: map[string]any{"insecure_skip_tls_verify": true}},
		"resources":    {Resources: []string{"pods"}, Extra: map[string]any{"resources": []string{"nodes"}}},
		"metadataOnly": {MetadataOnly: true, Extra: map[string]any{"metadata_only": false}},
	} {
		js, err := c.JSON()
		if !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: %s, %v", name, js, err)
		}
		if _, err := Open(c); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("Open %s: %v", name, err)
		}
	}
}

func TestConfigTypedFieldsReachTheLibrary(t *testing.T) {
	f := startFake(t)
	no := false
	r, err := Open(Config{Server: f.URL, Resources: []string{"pods"}, Scrub: &no, Gzip: true,
		IdleTimeout: time.Minute, ConnectTimeout: time.Second, PageSize: 1, ChannelCapacity: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	adds, _ := untilSynced(t, r, "pods")
	if len(adds) != len(f.Seeded) {
		t.Fatalf("first sync: %v", adds)
	}
	// The library checks the typed fields as it checks its document.
	_, err = Open(Config{Server: f.URL, Resources: []string{"pods"}, Exec: &ExecConfig{Command: "p"}, Token: "t"})
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "authenticate") {
		t.Errorf("two ways to authenticate: %v", err)
	}
	// A spec's encoding reaches the library too: an unknown one is refused.
	_, err = Open(Config{Server: f.URL, Specs: []ResourceSpec{{Resource: "pods", MetadataOnly: true, Encoding: "cbor"}}})
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "encoding") {
		t.Errorf("an unknown encoding: %v", err)
	}
	r2, err := Open(Config{Server: f.URL, Specs: []ResourceSpec{{Resource: "pods", MetadataOnly: true, Encoding: "json"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
}

func TestConfigPrintsNoSecret(t *testing.T) {
	c := full()
	c.Extra = map[string]any{"password": "extra-s3cret", "other": 1}
	c.Proxy = "http://user:proxy-s3cret@proxy:3128"
	c.Resume = []byte(`{"tattler_checkpoint":1,"resources":[{"objects":[["ns","checkpoint-bytes"]]}]}`)
	for _, format := range []string{"%v", "%+v", "%#v", "%s", "%q", "%10v", "%d", "%x"} {
		for _, v := range []any{c, &c, *c.Exec, c.Exec} {
			s := fmt.Sprintf(format, v)
			if strings.Contains(s, "s3cret") || (format != "%x" && !strings.Contains(s, redacted)) {
				t.Errorf("%s of %T: %s", format, v, s)
			}
			// A summary: no pointer addresses, no checkpoint bytes.
			if strings.Contains(s, "0xc") || strings.Contains(s, "checkpoint-bytes") {
				t.Errorf("%s of %T prints a pointer or the checkpoint: %s", format, v, s)
			}
		}
	}
	if s := fmt.Sprintf("%#v", c); !strings.HasPrefix(s, "tattler.Config{Server:") {
		t.Errorf("%%#v: %s", s)
	}
	if s := fmt.Sprintf("%+v", Config{Server: "s"}); strings.Contains(s, redacted) {
		t.Errorf("an empty token printed as set: %s", s)
	}
	s := c.String()
	for _, want := range []string{
		`Server:"https://10.0.0.1:6443"`, "Token:REDACTED", "Password:REDACTED",
		`Exec:{Command:"plugin", Args:["a"], Env:{K:REDACTED}`, "Scrub:false", "DropManagedFields:true",
		`Resources:["pods"]`, "IdleTimeout:1m0s", fmt.Sprintf("Resume:%d bytes", len(c.Resume)),
		"Extra:map[other:1 password:REDACTED]", "Shard:1/2", "Shard:0/3",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("String lacks %s: %s", want, s)
		}
	}
	if s := fmt.Sprint(Config{Resources: []string{"pods"}}); s != `tattler.Config{Resources:["pods"]}` {
		t.Errorf("only what is set: %s", s)
	}
	// Printing changes nothing.
	if s := fmt.Sprint(c); !strings.Contains(s, "http://user:REDACTED@proxy:3128") {
		t.Errorf("proxy: %s", s)
	}
	if c.Token != "tok-s3cret" || c.Proxy != "http://user:proxy-s3cret@proxy:3128" || c.Extra["password"] != "extra-s3cret" || c.Exec.Env["K"] != "env-s3cret" {
		t.Errorf("printing changed the config: %v", c.Extra)
	}
}

func TestEntryStringSummarises(t *testing.T) {
	for _, c := range []struct {
		e    Entry
		want string
	}{
		{Entry{Change: ChangeAdd, Version: "v1", Resource: "pods", Namespace: "shop", Name: "web-1",
			ResourceVersion: "12", Object: []byte(`{"kind":"Pod"}`)}, "Add v1/pods shop/web-1 12 (14 bytes)"},
		{Entry{Change: ChangeDelete, Group: "apps", Version: "v1", Resource: "deployments", Namespace: "a",
			Name: "d", ResourceVersion: "9", Inferred: true}, "Delete apps/v1/deployments a/d 9 (inferred)"},
		{Entry{Change: ChangeSynced, Version: "v1", Resource: "nodes", ResourceVersion: "40"}, "Synced v1/nodes 40"},
		{Entry{Change: ChangeError, Version: "v1", Resource: "nodes", Err: &StreamError{Code: 403, Reason: "Forbidden",
			Message: "no", Ended: true}}, "Error v1/nodes 403 Forbidden: no"},
		{Entry{Change: ChangeStale, Version: "v1", Resource: "pods", Namespace: "a", Err: &StreamError{Code: 503, Reason: "Refused",
			Message: "busy"}}, "Stale v1/pods a 503 Refused: busy"},
		{Entry{Change: ChangeLeading, Group: "coordination.k8s.io", Version: "v1", Resource: "leases", Namespace: "ns",
			Name: "l", Identity: "pod-1"}, "Leading coordination.k8s.io/v1/leases ns/l pod-1"},
		{Entry{Change: ChangeFollowing, Group: "coordination.k8s.io", Version: "v1", Resource: "leases", Namespace: "ns",
			Name: "l", Identity: "pod-1", Err: &StreamError{Reason: "Standby", Message: "waiting for the Lease"}},
			"Following coordination.k8s.io/v1/leases ns/l pod-1 0 Standby: waiting for the Lease"},
		{Entry{Change: Change(10), Version: "v1", Resource: "pods", Name: "n", ResourceVersion: "1"}, "Change(10) v1/pods n 1"},
	} {
		if got := fmt.Sprint(c.e); got != c.want {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
}

func TestEventsDeliversEveryEntryThenCloses(t *testing.T) {
	f := startFake(t)
	r := open(t, f, "pods")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ev := r.Events(ctx)
	recv := func() (Entry, bool) {
		t.Helper()
		select {
		case e, ok := <-ev.C:
			return e, ok
		case <-time.After(wait):
			t.Fatal("no entry on Events.C")
		}
		return Entry{}, false
	}
	var adds, want []string
	for {
		e, ok := recv()
		if !ok {
			t.Fatalf("closed early: %v", ev.Err())
		}
		if e.Change == ChangeSynced {
			break
		}
		adds = append(adds, line(e))
	}
	for key, rv := range f.Seeded {
		want = append(want, fmt.Sprintf("Add %s %d", key, rv))
	}
	sort.Strings(adds)
	sort.Strings(want)
	if strings.Join(adds, "\n") != strings.Join(want, "\n") {
		t.Fatalf("first sync:\n%v\nwant:\n%v", adds, want)
	}
	// A slow receiver loses nothing: three changes wait for it.
	var rvs []uint64
	for _, name := range []string{"slow-1", "slow-2", "slow-3"} {
		rvs = append(rvs, f.do(t, "apply pods shop "+name))
	}
	time.Sleep(100 * time.Millisecond) // not a synchronisation: only lets the stream run ahead
	for i, name := range []string{"slow-1", "slow-2", "slow-3"} {
		e, ok := recv()
		if got := line(e); !ok || got != fmt.Sprintf("Add shop/%s %d", name, rvs[i]) {
			t.Fatalf("entry %d: %s (%v)", i, got, ok)
		}
	}
	if ev.Err() != nil {
		t.Errorf("Err while open: %v", ev.Err())
	}
	r.Stop()
	if _, ok := recv(); ok {
		t.Fatal("an entry after Stop")
	}
	<-ev.Done()
	if ev.Err() != nil {
		t.Errorf("Err after Stop: %v", ev.Err())
	}
}

func TestEventsEndsWithTheContext(t *testing.T) {
	f := startFake(t)
	r := open(t, f, "pods")
	ctx, cancel := context.WithCancel(context.Background())
	ev := r.Events(ctx)
	// Nobody receives: the goroutine waits on its send, then on ctx.
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case <-ev.Done():
	case <-time.After(wait):
		t.Fatal("Events did not end with its context")
	}
	for range ev.C { // drained and closed
	}
	if !errors.Is(ev.Err(), context.Canceled) {
		t.Errorf("Err: %v", ev.Err())
	}
	// The reader runs on: Next still works.
	if e := next(t, r); e.Resource != "pods" {
		t.Errorf("after Events: %+v", e)
	}
	// A closed reader: C closes at once, Err nil.
	r.Close()
	ev = r.Events(context.Background())
	if _, ok := <-ev.C; ok || ev.Err() != nil {
		t.Errorf("after Close: %v %v", ok, ev.Err())
	}
}

func TestWithoutCgoTheBuildSaysSo(t *testing.T) {
	cmd := exec.Command("go", "build", ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	// The one error, the sentence, comes first (no other file is built).
	var errors []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, ".go:") {
			errors = append(errors, l)
		}
	}
	if err == nil || len(errors) != 1 || !strings.Contains(errors[0], "tattler_requires_cgo__build_with_CGO_ENABLED_1") {
		t.Fatalf("CGO_ENABLED=0 go build: %v\n%s", err, out)
	}
}

func TestModulePathFollowsTheRepository(t *testing.T) {
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	path := regexp.MustCompile(`(?m)^module (\S+)`).FindSubmatch(mod)
	if path == nil {
		t.Fatalf("no module line in go.mod:\n%s", mod)
	}
	// The import path ends in the package's name.
	importPath := string(path[1]) + "/tattler"
	if pkg := filepath.Base(importPath); pkg != "tattler" {
		t.Errorf("the import path %s does not end in the package name", importPath)
	}
	cargo, err := os.ReadFile("../../../Cargo.toml")
	if err != nil {
		t.Skip("not in the repository:", err) // the copy ci-consumers.sh makes
	}
	repo := regexp.MustCompile(`(?m)^repository = "https://([^"]+)"`).FindSubmatch(cargo)
	if repo == nil || string(path[1]) != string(repo[1])+"/ffi/go" {
		t.Fatalf("go.mod's module %q is not Cargo.toml's repository %q + /ffi/go (tags: ffi/go/vX.Y.Z)", path[1], repo)
	}
}
