// Command gen writes schema.txt: the protobuf field numbers and the JSON
// rules (names, order, omitempty, inline, pointers) of every built-in kind
// client-go's scheme registers for Kubernetes v1.36, read by reflection from
// the Go types the apiserver itself encodes with, so that tattler can write
// the JSON the server would have sent for an object that came as protobuf
// (src/wire/proto_json.rs). Run: cd src/wire/schema && go run gen.go > schema.txt
//
// A kind whose types use what the converter does not handle (floats,
// interfaces, non-string map keys, named slices with protobuf wrappers,
// fields without a protobuf tag) is left out, with a comment line saying
// why; tattler reads it as JSON.
package main

import (
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
)

// Types written by a MarshalJSON of their own, each a fixed protobuf message.
var special = map[string]string{
	"k8s.io/apimachinery/pkg/apis/meta/v1.Time":       "T",
	"k8s.io/apimachinery/pkg/apis/meta/v1.MicroTime":  "U",
	"k8s.io/apimachinery/pkg/apis/meta/v1.Duration":   "D",
	"k8s.io/apimachinery/pkg/api/resource.Quantity":   "Q",
	"k8s.io/apimachinery/pkg/util/intstr.IntOrString": "I",
	"k8s.io/apimachinery/pkg/runtime.RawExtension":    "R",
	"k8s.io/apimachinery/pkg/apis/meta/v1.FieldsV1":   "F",
	"k8s.io/apimachinery/pkg/apis/meta/v1.ObjectMeta": "O",
}

// Nested objects whose kind and apiVersion the apiserver always sets:
// k8s.io/kubernetes pkg/apis/apps/{v1,v1beta1,v1beta2}/conversion.go sets
// them on every StatefulSet's volumeClaimTemplates (issue 87583).
var typeMetaSet = map[string]string{
	"StatefulSetSpec.VolumeClaimTemplates": "v1/PersistentVolumeClaim",
}

// elem is a field type without its pointer, slice or map.
func elem(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	return t
}

type field struct {
	json  string
	num   int
	typ   string
	flags string
}

type msg struct {
	name   string
	fields []field
}

type gen struct {
	index map[reflect.Type]int
	msgs  []*msg
	busy  map[reflect.Type]bool
}

func (g *gen) message(t reflect.Type) (int, error) {
	if i, ok := g.index[t]; ok {
		return i, nil
	}
	if g.busy[t] {
		return 0, fmt.Errorf("%s is recursive", t)
	}
	g.busy[t] = true
	defer delete(g.busy, t)
	m := &msg{name: t.PkgPath() + "." + t.Name()}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		parts := strings.Split(tag, ",")
		name := parts[0]
		flags := ""
		for _, o := range parts[1:] {
			switch o {
			case "omitempty":
				flags += "o"
			case "omitzero":
				flags += "z"
			case "inline", "":
			default:
				return 0, fmt.Errorf("%s.%s: json option %q", t, f.Name, o)
			}
		}
		pb := f.Tag.Get("protobuf")
		if f.Anonymous && name == "" && f.Type.Name() == "TypeMeta" {
			continue // kind and apiVersion: from the envelope
		}
		if pb == "" {
			return 0, fmt.Errorf("%s.%s: no protobuf tag", t, f.Name)
		}
		pbp := strings.Split(pb, ",")
		num, err := strconv.Atoi(pbp[1])
		if err != nil {
			return 0, fmt.Errorf("%s.%s: protobuf tag %q", t, f.Name, pb)
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				return 0, fmt.Errorf("%s.%s: embedded pointer", t, f.Name)
			}
			sub, err := g.message(ft)
			if err != nil {
				return 0, err
			}
			m.fields = append(m.fields, field{"-", num, "m" + strconv.Itoa(sub), "n"})
			continue
		}
		if name == "" {
			name = f.Name
		}
		typ, more, err := g.typeOf(f.Type, true)
		if err != nil {
			return 0, fmt.Errorf("%s.%s: %w", t, f.Name, err)
		}
		extra := ""
		if et := elem(f.Type); et.Kind() == reflect.Struct {
			if tm, ok := et.FieldByName("TypeMeta"); ok && tm.Anonymous {
				// A nested object with a TypeMeta of its own: protobuf
				// does not carry it. Only where the apiserver's
				// conversion sets it always is it written (constants).
				rule, known := typeMetaSet[t.Name()+"."+f.Name]
				if !known {
					return 0, fmt.Errorf("%s.%s: a nested TypeMeta", t, f.Name)
				}
				extra = " " + rule
			}
		}
		m.fields = append(m.fields, field{name, num, typ, more + flags + extra})
	}
	// encoding/json's dominance: a name given twice at the same depth, or
	// promoted over a field of the same name, is not handled here.
	seen := map[string]bool{}
	var walk func(m *msg) error
	walk = func(m *msg) error {
		for _, f := range m.fields {
			if strings.Contains(f.flags, "n") {
				i, _ := strconv.Atoi(f.typ[1:])
				if err := walk(g.msgs[i]); err != nil {
					return err
				}
				continue
			}
			if seen[f.json] {
				return fmt.Errorf("%s: JSON name %q twice", t, f.json)
			}
			seen[f.json] = true
		}
		return nil
	}
	if err := walk(m); err != nil {
		return 0, err
	}
	g.msgs = append(g.msgs, m)
	i := len(g.msgs) - 1
	g.index[t] = i
	return i, nil
}

// typeOf gives a field type's code and the flags its shape adds
// (p pointer, l list, k map with string keys).
func (g *gen) typeOf(t reflect.Type, top bool) (string, string, error) {
	flags := ""
	if t.Kind() == reflect.Pointer {
		flags += "p"
		t = t.Elem()
	}
	if s, ok := special[t.PkgPath()+"."+t.Name()]; ok {
		return s, flags, nil
	}
	switch t.Kind() {
	case reflect.String:
		return "s", flags, nil
	case reflect.Bool:
		return "b", flags, nil
	case reflect.Int32:
		return "i32", flags, nil
	case reflect.Int64:
		return "i64", flags, nil
	case reflect.Uint32:
		return "u32", flags, nil
	case reflect.Uint64:
		return "u64", flags, nil
	case reflect.Struct:
		i, err := g.message(t)
		return "m" + strconv.Itoa(i), flags, err
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "y", flags, nil
		}
		if !top || flags != "" {
			return "", "", fmt.Errorf("a nested list")
		}
		if t.Name() != "" {
			return "", "", fmt.Errorf("a named list type %s", t)
		}
		typ, more, err := g.typeOf(t.Elem(), false)
		if more != "" {
			return "", "", fmt.Errorf("a list of pointers")
		}
		return typ, "l", err
	case reflect.Map:
		if !top || flags != "" || t.Key().Kind() != reflect.String {
			return "", "", fmt.Errorf("a map of this shape")
		}
		if t.Elem().Kind() == reflect.Slice && t.Elem().Elem().Kind() != reflect.Uint8 {
			return "", "", fmt.Errorf("a map of lists")
		}
		typ, more, err := g.typeOf(t.Elem(), false)
		if more != "" {
			return "", "", fmt.Errorf("a map of pointers")
		}
		return typ, "k", err
	}
	return "", "", fmt.Errorf("type %s", t)
}

func main() {
	g := &gen{index: map[reflect.Type]int{}, busy: map[reflect.Type]bool{}}
	type kind struct {
		gv, kind string
		msg      int
	}
	var kinds []kind
	var skipped []string
	// In a fixed order (a map's is random), so that the output is the same
	// on every run: CI checks it is.
	known := scheme.Scheme.AllKnownTypes()
	gvks := make([]schema.GroupVersionKind, 0, len(known))
	for gvk := range known {
		gvks = append(gvks, gvk)
	}
	sort.Slice(gvks, func(a, b int) bool { return gvks[a].String() < gvks[b].String() })
	for _, gvk := range gvks {
		t := known[gvk]
		if gvk.Version == "__internal" || strings.HasSuffix(gvk.Kind, "List") {
			continue
		}
		if _, ok := t.FieldByName("ObjectMeta"); !ok {
			continue
		}
		// One kind at a time: what a failed kind added is dropped.
		saveIndex := map[reflect.Type]int{}
		for k, v := range g.index {
			saveIndex[k] = v
		}
		saveLen := len(g.msgs)
		i, err := g.message(t)
		gv := gvk.GroupVersion().String()
		if err != nil {
			g.index, g.msgs = saveIndex, g.msgs[:saveLen]
			skipped = append(skipped, fmt.Sprintf("# %s %s left out: %v", gv, gvk.Kind, err))
			continue
		}
		kinds = append(kinds, kind{gv, gvk.Kind, i})
	}
	sort.Slice(kinds, func(a, b int) bool {
		if kinds[a].gv != kinds[b].gv {
			return kinds[a].gv < kinds[b].gv
		}
		return kinds[a].kind < kinds[b].kind
	})
	sort.Strings(skipped)
	w := os.Stdout
	fmt.Fprintln(w, "# Generated by src/wire/schema/gen.go from k8s.io/api v0.36.3; do not edit.")
	fmt.Fprintln(w, "# K apiVersion Kind message | M index Go type | F json-name field-number type flags [apiVersion/Kind its items always carry]")
	for _, s := range skipped {
		fmt.Fprintln(w, s)
	}
	for _, k := range kinds {
		fmt.Fprintf(w, "K %s %s %d\n", k.gv, k.kind, k.msg)
	}
	for i, m := range g.msgs {
		fmt.Fprintf(w, "M %d %s\n", i, m.name)
		for _, f := range m.fields {
			fl := f.flags
			if fl == "" {
				fl = "-"
			}
			fmt.Fprintf(w, "F %s %d %s %s\n", f.json, f.num, f.typ, fl)
		}
	}
}
