//go:build cgo

package tattler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"
)

// podOn is the apply-json command for a pod scheduled to node.
func podOn(ns, name, node string) string {
	return fmt.Sprintf(`apply-json pods {"metadata":{"name":%q,"namespace":%q},"spec":{"nodeName":%q,"containers":[{"name":"c","image":"i"}]}}`, name, ns, node)
}

func TestConfigJSONSpellsNamesSpecsAndMetadataOnly(t *testing.T) {
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{Server: "s", Resources: []string{"pods"}},
			`{"resources":["pods"],"server":"s"}`},
		{Config{Server: "s"}, `{"resources":[],"server":"s"}`},
		{Config{Server: "s", Namespace: "ns", Resources: []string{"pods"},
			Specs: []ResourceSpec{{Resource: "nodes", FieldSelector: "metadata.name=n1"},
				{Resource: "configmaps", Namespaces: []string{"a", "b"}, MetadataOnly: true}}},
			`{"namespace":"ns","resources":["pods",{"resource":"nodes","field_selector":"metadata.name=n1"},{"resource":"configmaps","namespaces":["a","b"],"metadata_only":true}],"server":"s"}`},
		{Config{Server: "s", Namespace: "ns", LabelSelector: "app=x", MetadataOnly: true, Resources: []string{"pods"}},
			`{"label_selector":"app=x","namespace":"ns","resources":[{"resource":"pods","namespace":"ns","label_selector":"app=x","metadata_only":true}],"server":"s"}`},
	}
	for _, c := range cases {
		got, err := c.cfg.JSON()
		if err != nil || got != c.want {
			t.Errorf("%+v:\n got %s (%v)\nwant %s", c.cfg, got, err, c.want)
		}
	}
}

func TestANodeAgentStreamsItsNodeAndItsPods(t *testing.T) {
	f := startFake(t, "--pods", "0")
	rvA := f.do(t, podOn("shop", "a", "n1"))
	f.do(t, podOn("shop", "b", "n2"))
	rvN1 := f.do(t, `apply-json nodes {"metadata":{"name":"n1"}}`)
	f.do(t, `apply-json nodes {"metadata":{"name":"n2"}}`)
	r, err := Open(Config{Server: f.URL, Namespace: "not-for-specs", Specs: []ResourceSpec{
		{Resource: "pods", FieldSelector: "spec.nodeName=n1", MetadataOnly: true},
		{Resource: "nodes", FieldSelector: "metadata.name=n1"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	var lines []string
	var pod Entry
	for synced := 0; synced < 2; {
		e := next(t, r)
		if e.Change == ChangeSynced {
			synced++
		}
		if e.Change == ChangeAdd && e.Resource == "pods" {
			pod = e
		}
		lines = append(lines, line(e))
	}
	sort.Strings(lines)
	cur := f.do(t, `apply-json nodes {"metadata":{"name":"n2"}}`) - 1
	want := []string{fmt.Sprintf("Add /n1 %d", rvN1), fmt.Sprintf("Add shop/a %d", rvA),
		fmt.Sprintf("Synced v1/nodes %d", cur), fmt.Sprintf("Synced v1/pods %d", cur)}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("first sync:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	// The metadata-only pod: its metadata, nothing else.
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(pod.Object, &obj); err != nil {
		t.Fatal(err)
	}
	if len(obj) != 3 || string(obj["kind"]) != `"PartialObjectMetadata"` || string(obj["apiVersion"]) != `"meta.k8s.io/v1"` {
		t.Fatalf("metadata-only object: %s", pod.Object)
	}

	// Specs at run time: the node's configmaps in two namespaces.
	changed, err := r.SetResourceSpecs([]string{"configmaps"}, []ResourceSpec{
		{Resource: "pods", FieldSelector: "spec.nodeName=n1", MetadataOnly: true},
		{Resource: "nodes", FieldSelector: "metadata.name=n1"},
	}, false)
	if err != nil || !changed {
		t.Fatalf("SetResourceSpecs: %v %v", changed, err)
	}
	if l, _ := untilSynced(t, r, "configmaps"); len(l) != 0 {
		t.Fatalf("configmaps: %v", l)
	}
	_, err = r.SetResourceSpecs(nil, []ResourceSpec{{Resource: "pods", Namespace: "a", Namespaces: []string{"b"}}}, false)
	var se *Error
	if !errors.As(err, &se) || se.Status != StatusInvalidResource || !strings.Contains(se.Message, "not both") {
		t.Fatalf("namespace and namespaces: %v", err)
	}
	stats, err := r.Stats()
	if err != nil || len(stats) != 3 {
		t.Fatalf("stats: %+v %v", stats, err)
	}
}

func TestMetadataOnlyAppliesToNamesAndSetResources(t *testing.T) {
	f := startFake(t, "--pods", "2")
	r, err := Open(Config{Server: f.URL, Resources: []string{"pods"}, MetadataOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	for {
		e := next(t, r)
		if e.Change == ChangeSynced {
			break
		}
		if !strings.Contains(string(e.Object), `"kind":"PartialObjectMetadata"`) || strings.Contains(string(e.Object), `"spec"`) {
			t.Fatalf("not metadata only: %s", e.Object)
		}
	}
	f.do(t, "apply configmaps ns cm")
	if _, err := r.SetResources([]string{"pods", "configmaps"}, false); err != nil {
		t.Fatal(err)
	}
	e := next(t, r)
	if e.Resource != "configmaps" || e.Change != ChangeAdd || !strings.Contains(string(e.Object), `"PartialObjectMetadata"`) {
		t.Fatalf("configmaps entry: %+v %s", e, e.Object)
	}
	text, err := r.MetricsText()
	if err != nil || !strings.Contains(text, `tattler_objects{resource="v1/configmaps",metadata_only="true"} 1`) {
		t.Fatalf("metrics: %v\n%s", err, text)
	}
}

func TestMetricsTextIsPrometheusText(t *testing.T) {
	f := startFake(t)
	r := open(t, f, "pods", "nodes")
	for synced := 0; synced < 2; {
		if next(t, r).Change == ChangeSynced {
			synced++
		}
	}
	text, err := r.MetricsText()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"# TYPE tattler_events_total counter\n",
		fmt.Sprintf("\ntattler_objects{resource=\"v1/pods\"} %d\n", len(f.Seeded)),
		"\ntattler_objects{resource=\"v1/nodes\"} 0\n",
		"\ntattler_synced{resource=\"v1/pods\"} 1\n",
		"\ntattler_channel_entries 0\n",
	}
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("no %q in\n%s", w, text)
		}
	}
	if !strings.HasSuffix(text, "\n") || strings.Contains(text, "\x00") {
		t.Errorf("not a clean text: %q", text)
	}
	r.Close()
	if _, err := r.MetricsText(); !errors.Is(err, ErrClosed) {
		t.Fatalf("MetricsText after Close: %v", err)
	}
}

func TestACheckpointResumesAcrossARestart(t *testing.T) {
	for _, compacted := range []bool{false, true} {
		f := startFake(t)
		r, err := Open(Config{Server: f.URL, Resources: []string{"pods"}})
		if err != nil {
			t.Fatal(err)
		}
		untilSynced(t, r, "pods")
		// Shutting down: stop, drain, checkpoint, close.
		r.Stop()
		if _, err := r.Next(context.Background()); !errors.Is(err, ErrClosed) {
			t.Fatalf("drained: %v", err)
		}
		cp, err := r.Checkpoint()
		if err != nil || !json.Valid(cp) {
			t.Fatalf("checkpoint %q: %v", cp, err)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Checkpoint(); !errors.Is(err, ErrClosed) {
			t.Fatalf("Checkpoint after Close: %v", err)
		}
		at := f.do(t, "apply pods shop new") - 1
		add := at + 1
		up := f.do(t, "apply pods default pod-1")
		del := f.do(t, "delete pods default pod-2")
		if compacted {
			f.do(t, "compact")
		}
		r2, err := Open(Config{Server: f.URL, Resources: []string{"pods"}, Resume: cp})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r2.Close() })
		// What changed while it was stopped, then one Synced: caught up.
		var got []string
		if compacted {
			got, _ = untilSynced(t, r2, "pods")
			sort.Strings(got)
			want := []string{fmt.Sprintf("Add shop/new %d", add), fmt.Sprintf("Delete default/pod-2 %d", f.Seeded["default/pod-2"]),
				fmt.Sprintf("Snapshot default/pod-3 %d", f.Seeded["default/pod-3"]),
				// The checkpoint's resourceVersion is compacted away: a re-sync, told.
				"Stale v1/pods Resyncing", fmt.Sprintf("Update default/pod-1 %d", up)}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("re-sync:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		} else {
			for i := 0; i < 3; i++ {
				got = append(got, line(next(t, r2)))
			}
			want := []string{fmt.Sprintf("Add shop/new %d", add), fmt.Sprintf("Update default/pod-1 %d", up),
				fmt.Sprintf("Delete default/pod-2 %d", del)}
			if s := line(next(t, r2)); s != fmt.Sprintf("Synced v1/pods %d", del) {
				t.Fatalf("after the changes: %s", s)
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("resumed:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}
	}
}

func TestABadCheckpointIsErrInvalidCheckpoint(t *testing.T) {
	f := startFake(t)
	r, err := Open(Config{Server: f.URL, Resources: []string{"pods"}, Resume: []byte(`{"tattler_checkpoint":7,"resources":[]}`)})
	var se *Error
	if r != nil || !errors.Is(err, ErrInvalidCheckpoint) || !errors.As(err, &se) || !strings.Contains(se.Message, "version 7") {
		t.Fatalf("bad checkpoint: %v", err)
	}
	r, err = OpenJSONResume(fmt.Sprintf(`{"server":%q,"resources":["pods"]}`, f.URL), []byte{})
	if err != nil {
		t.Fatalf("an empty checkpoint is a plain open: %v", err)
	}
	r.Close()
}

func TestAWildcardFollowsCRDsAsTheyComeAndGo(t *testing.T) {
	f := startFake(t)
	r, err := Open(Config{Server: f.URL, Resources: []string{"pods", "*.example.com"},
		Extra: map[string]any{"discovery_interval_secs": 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	untilSynced(t, r, "pods")
	// A CRD established after start is found by the next look.
	f.do(t, "add-resource example.com v1 widgets Widget namespaced")
	rv := f.do(t, `apply-json example.com/v1/widgets {"metadata":{"name":"w1","namespace":"a"}}`)
	lines, synced := untilSynced(t, r, "widgets")
	if strings.Join(lines, "\n") != fmt.Sprintf("Add a/w1 %d", rv) || synced.Group != "example.com" {
		t.Fatalf("widgets: %v %+v", lines, synced)
	}
	// Deleted: its objects go, then its stream.
	f.do(t, "remove-resource example.com/v1/widgets")
	if got := line(next(t, r)); !strings.HasPrefix(got, "Delete a/w1 ") {
		t.Fatalf("after the CRD went: %s", got)
	}
	deadline := time.Now().Add(wait)
	for {
		stats, err := r.Stats()
		if err != nil {
			t.Fatal(err)
		}
		if len(stats) == 1 && stats[0].Resource == "v1/pods" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the widgets stream stayed: %+v", stats)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
