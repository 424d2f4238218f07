// Command fleet-loader writes what the fleet benchmark needs through the
// apiserver (JSON over one HTTP/2 connection, standard library only): the
// fake Nodes and the services, the churn, and the markers the harness uses
// to ask "is every agent current?". Pods come from bench/real/loader.
//
//	fleet-loader -server URL -ca FILE -token-file FILE nodes -n 100
//	fleet-loader ... services -n 20 -namespace fleet
//	fleet-loader ... podmap -o FILE                every pod's namespace/name by node (one LIST,
//	                                               done once: the phases' writes read FILE)
//	fleet-loader ... churn -pods FILE -n 2000 -rate 50   pod annotation updates at a steady rate
//	fleet-loader ... marker -pods FILE -value V -nodes 100   fleet.bench/marker=V on every node,
//	                                               one pod per node, namespace fleet, one service
//
// Each prints one JSON line.
package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

var (
	server, auth string
	client       *http.Client
)

func do(method, path, ctype string, body []byte) (int, []byte, error) {
	for try := 0; ; try++ {
		req, err := http.NewRequest(method, server+path, bytes.NewReader(body))
		if err != nil {
			return 0, nil, err
		}
		req.Header.Set("Authorization", auth)
		req.Header.Set("Accept", "application/json")
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		req.Header.Set("User-Agent", "fleet-loader")
		resp, err := client.Do(req)
		var code int
		var b []byte
		if err == nil {
			code = resp.StatusCode
			b, err = io.ReadAll(io.LimitReader(resp.Body, 256<<20))
			resp.Body.Close()
		}
		// A loaded 2-core apiserver can time out or shed a request: a few tries.
		if (err == nil && code != 429 && code < 500) || try == 4 {
			return code, b, err
		}
		time.Sleep(time.Duration(try+1) * 300 * time.Millisecond)
	}
}

func must(what string, ok ...int) func(int, []byte, error) []byte {
	return func(code int, b []byte, err error) []byte {
		if err != nil {
			fail("%s: %v", what, err)
		}
		for _, c := range ok {
			if c == code {
				return b
			}
		}
		fail("%s: HTTP %d %.300s", what, code, b)
		return nil
	}
}

func node(i int) string { return fmt.Sprintf("node-%03d", i) }

func nodeBody(i int) []byte {
	return []byte(fmt.Sprintf(`{"apiVersion":"v1","kind":"Node","metadata":{"name":%q,"labels":{"kubernetes.io/hostname":%q,"kubernetes.io/os":"linux","node.kubernetes.io/instance-type":"m5.xlarge","topology.kubernetes.io/zone":"zone-%d"}},"spec":{"podCIDR":"10.%d.%d.0/24"},"status":{"capacity":{"cpu":"4","memory":"16Gi","pods":"110"},"allocatable":{"cpu":"3920m","memory":"15Gi","pods":"110"},"nodeInfo":{"kubeletVersion":"v1.36.3","osImage":"Debian GNU/Linux 13","kernelVersion":"6.12.0","containerRuntimeVersion":"containerd://2.1.0","architecture":"amd64","operatingSystem":"linux","machineID":"","systemUUID":"","bootID":"","kubeProxyVersion":""}}}`,
		node(i), node(i), i%3, i/250, i%250))
}

// podsByNode lists every pod (metadata and spec.nodeName only matter) and
// returns namespace/name grouped by node, in a fixed order.
func podsByNode() (map[string][]string, []string) {
	by := map[string][]string{}
	var all []string
	cont := ""
	for {
		p := "/api/v1/pods?limit=1000"
		if cont != "" {
			p += "&continue=" + url.QueryEscape(cont)
		}
		b := must("list pods", 200)(do("GET", p, "", nil))
		var page struct {
			Metadata struct{ Continue string } `json:"metadata"`
			Items    []struct {
				Metadata struct{ Name, Namespace string } `json:"metadata"`
				Spec     struct{ NodeName string }        `json:"spec"`
			} `json:"items"`
		}
		if err := json.Unmarshal(b, &page); err != nil {
			fail("list pods: %v", err)
		}
		for _, it := range page.Items {
			k := it.Metadata.Namespace + "/" + it.Metadata.Name
			by[it.Spec.NodeName] = append(by[it.Spec.NodeName], k)
			all = append(all, k)
		}
		if cont = page.Metadata.Continue; cont == "" {
			break
		}
	}
	for _, v := range by {
		sort.Strings(v)
	}
	sort.Strings(all)
	return by, all
}

func annotate(path, key, value string) {
	body := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, key, value)
	must("patch "+path, 200)(do("PATCH", path, "application/merge-patch+json", []byte(body)))
}

func podPath(k string) string {
	ns, name, _ := strings.Cut(k, "/")
	return "/api/v1/namespaces/" + ns + "/pods/" + name
}

func parallel(n, conc int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		}()
	}
	wg.Wait()
}

func main() {
	flag.StringVar(&server, "server", "", "apiserver URL")
	caFile := flag.String("ca", "", "CA bundle (PEM)")
	tokenFile := flag.String("token-file", "", "bearer token file")
	flag.Parse()
	if server == "" || *caFile == "" || *tokenFile == "" || flag.NArg() < 1 {
		fail("usage: fleet-loader -server URL -ca FILE -token-file FILE nodes|services|churn|marker [flags]")
	}
	pem, err := os.ReadFile(*caFile)
	if err != nil {
		fail("ca: %v", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	tok, err := os.ReadFile(*tokenFile)
	if err != nil {
		fail("token: %v", err)
	}
	auth = "Bearer " + strings.TrimSpace(string(tok))
	client = &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 32}}

	sub := flag.NewFlagSet(flag.Arg(0), flag.ExitOnError)
	n := sub.Int("n", 100, "how many")
	nodes := sub.Int("nodes", 100, "nodes (marker)")
	rate := sub.Float64("rate", 50, "writes per second (churn)")
	ns := sub.String("namespace", "fleet", "namespace (services, marker)")
	value := sub.Int64("value", 1, "marker value")
	podsFile := sub.String("pods", "", "podmap's file (churn, marker)")
	outFile := sub.String("o", "", "output file (podmap)")
	load := func() (map[string][]string, []string) {
		b, err := os.ReadFile(*podsFile)
		if err != nil {
			fail("-pods: %v", err)
		}
		var by map[string][]string
		if err := json.Unmarshal(b, &by); err != nil {
			fail("-pods: %v", err)
		}
		var all []string
		for _, v := range by {
			all = append(all, v...)
		}
		sort.Strings(all)
		return by, all
	}
	_ = sub.Parse(flag.Args()[1:])
	t0 := time.Now()
	out := map[string]any{"command": flag.Arg(0)}
	switch flag.Arg(0) {
	case "nodes":
		var created atomic.Int64
		parallel(*n, 8, func(i int) {
			b := must("node", 201, 409)
			code, body, err := do("POST", "/api/v1/nodes", "application/json", nodeBody(i))
			b(code, body, err)
			if code == 201 {
				created.Add(1)
			}
		})
		out["nodes"], out["created"] = *n, created.Load()
	case "services":
		must("namespace", 201, 409)(do("POST", "/api/v1/namespaces", "application/json",
			[]byte(fmt.Sprintf(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":%q}}`, *ns))))
		parallel(*n, 4, func(i int) {
			body := fmt.Sprintf(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"svc-%02d","namespace":%q,"labels":{"app":"svc-%02d","tier":"backend"}},"spec":{"selector":{"app":"svc-%02d"},"ports":[{"name":"http","port":80,"targetPort":8080},{"name":"metrics","port":9090}]}}`, i, *ns, i, i)
			must("service", 201, 409)(do("POST", "/api/v1/namespaces/"+*ns+"/services", "application/json", []byte(body)))
		})
		out["services"] = *n
	case "podmap":
		by, all := podsByNode()
		b, _ := json.Marshal(by)
		if err := os.WriteFile(*outFile, b, 0o644); err != nil {
			fail("podmap: %v", err)
		}
		out["pods"], out["nodes"] = len(all), len(by)
	case "churn":
		// Pods in a fixed order, round robin: every node's agent sees its share.
		_, all := load()
		if len(all) == 0 {
			fail("churn: no pods")
		}
		interval := time.Duration(float64(time.Second) / *rate)
		sem := make(chan struct{}, 16)
		var wg sync.WaitGroup
		var late atomic.Int64
		start := time.Now()
		stamp := fmt.Sprint(start.UnixNano())
		for i := 0; i < *n; i++ {
			due := start.Add(time.Duration(i) * interval)
			if d := time.Until(due); d > 0 {
				time.Sleep(d)
			} else if d < -time.Second {
				late.Add(1)
			}
			sem <- struct{}{}
			wg.Add(1)
			go func(i int) {
				defer func() { <-sem; wg.Done() }()
				annotate(podPath(all[(i*37)%len(all)]), "fleet.bench/churn", fmt.Sprintf("%s-%d", stamp, i))
			}(i)
		}
		wg.Wait()
		secs := time.Since(start).Seconds()
		out["writes"], out["rate_asked"], out["rate"], out["late_over_1s"] = *n, *rate, float64(*n)/secs, late.Load()
	case "marker":
		by, _ := load()
		v := fmt.Sprint(*value)
		writes := 0
		var paths []string
		for i := 0; i < *nodes; i++ {
			paths = append(paths, "/api/v1/nodes/"+node(i))
			if p := by[node(i)]; len(p) > 0 {
				paths = append(paths, podPath(p[0]))
			}
		}
		paths = append(paths, "/api/v1/namespaces/"+*ns, "/api/v1/namespaces/"+*ns+"/services/svc-00")
		parallel(len(paths), 16, func(i int) { annotate(paths[i], "fleet.bench/marker", v) })
		writes = len(paths)
		out["value"], out["writes"] = *value, writes
	default:
		fail("unknown command %q", flag.Arg(0))
	}
	out["seconds"] = time.Since(t0).Seconds()
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
}

func fail(f string, a ...any) {
	fmt.Fprintf(os.Stderr, "fleet-loader: "+f+"\n", a...)
	os.Exit(1)
}
