// Command loader creates N realistic pods in a real kube-apiserver, through
// the apiserver (POST /api/v1/namespaces/NS/pods, JSON, HTTP/2 keep-alive,
// C requests in flight), as kubectl or a controller would: the apiserver
// validates, defaults, fills managedFields and writes them to etcd.
//
// usage: loader -server URL -ca FILE -token-file FILE [-n N] [-c C] [-nodes K]
//
// Pods are a pure function of their index (pod.go), spread over 50
// namespaces and K node names (spec.nodeName, so that a node agent's field
// selector picks N/K of them; no node object is needed: the pods stay
// Pending). Pods that already exist (one metadata-only LIST finds them; a 409
// also counts) are skipped, so a rerun fills in what an interrupted one left. Prints one JSON line.
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
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	server := flag.String("server", "", "apiserver URL (https://127.0.0.1:PORT)")
	caFile := flag.String("ca", "", "CA bundle (PEM)")
	tokenFile := flag.String("token-file", "", "bearer token file")
	n := flag.Int("n", 30000, "pods")
	conc := flag.Int("c", 24, "requests in flight")
	nodes := flag.Int("nodes", 100, "node names to spread the pods over")
	sample := flag.Bool("sample", false, "print pod 0 as sent and exit")
	flag.Parse()
	if *sample {
		os.Stdout.Write(Pod(0, *nodes).Body)
		return
	}
	if *server == "" || *caFile == "" || *tokenFile == "" {
		fail("usage: loader -server URL -ca FILE -token-file FILE [-n N] [-c C] [-nodes K]")
	}
	pem, err := os.ReadFile(*caFile)
	if err != nil {
		fail("ca: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		fail("ca: no certificate in %s", *caFile)
	}
	tok, err := os.ReadFile(*tokenFile)
	if err != nil {
		fail("token: %v", err)
	}
	auth := "Bearer " + strings.TrimSpace(string(tok))
	client := &http.Client{
		Timeout: 60 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig:     &tls.Config{RootCAs: pool},
			ForceAttemptHTTP2:   true,
			MaxIdleConnsPerHost: *conc,
		},
	}
	do := func(method, path string, body []byte, accept string) (int, []byte, error) {
		req, err := http.NewRequest(method, *server+path, bytes.NewReader(body))
		if err != nil {
			return 0, nil, err
		}
		req.Header.Set("Authorization", auth)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", accept)
		req.Header.Set("User-Agent", "kubectl/v1.36.3 (linux/amd64) kubernetes/bench")
		resp, err := client.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		return resp.StatusCode, b, err
	}

	t0 := time.Now()
	for k := 0; k < 50; k++ {
		ns := Namespace(k)
		body := fmt.Sprintf(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":%q,"labels":{"team":%q}}}`, ns, strings.SplitN(ns, "-", 2)[0])
		code, b, err := do("POST", "/api/v1/namespaces", []byte(body), "application/json")
		if err != nil || (code != 201 && code != 409) {
			fail("namespace %s: %d %v %s", ns, code, err, b)
		}
	}

	// What an earlier run loaded is skipped. All N there (the pods are a pure
	// function of their index, and nothing else makes pods here): one LIST of
	// one item tells. Otherwise a paged metadata-only LIST names them.
	code, b, err := do("GET", "/api/v1/pods?limit=1", nil, "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")
	if err != nil || code != 200 {
		fail("list: %d %v %.300s", code, err, b)
	}
	var head struct {
		Metadata struct {
			Remaining *int64 `json:"remainingItemCount"`
		} `json:"metadata"`
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		fail("list: %v", err)
	}
	total := int64(len(head.Items))
	if head.Metadata.Remaining != nil {
		total += *head.Metadata.Remaining
	}
	have := map[string]bool{}
	cont := ""
	for total != int64(*n) {
		path := "/api/v1/pods?limit=5000"
		if cont != "" {
			path += "&continue=" + url.QueryEscape(cont)
		}
		code, b, err := do("GET", path, nil, "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")
		if err != nil || code != 200 {
			fail("list: %d %v %.300s", code, err, b)
		}
		var page struct {
			Metadata struct {
				Continue string `json:"continue"`
			} `json:"metadata"`
			Items []struct {
				Metadata struct {
					Name      string `json:"name"`
					Namespace string `json:"namespace"`
				} `json:"metadata"`
			} `json:"items"`
		}
		if err := json.Unmarshal(b, &page); err != nil {
			fail("list: %v", err)
		}
		for _, it := range page.Items {
			have[it.Metadata.Namespace+"/"+it.Metadata.Name] = true
		}
		if cont = page.Metadata.Continue; cont == "" {
			break
		}
	}

	var next, created, existed, sent atomic.Int64
	if total == int64(*n) {
		// Every pod is there; nothing to send.
		next.Store(int64(*n))
		existed.Store(int64(*n))
	}
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for w := 0; w < *conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= *n || firstErr.Load() != nil {
					return
				}
				p := Pod(i, *nodes)
				if have[p.Namespace+"/"+p.Name] {
					existed.Add(1)
					continue
				}
				sent.Add(int64(len(p.Body)))
				path := "/api/v1/namespaces/" + p.Namespace + "/pods?fieldManager=kubectl-client-side-apply&fieldValidation=Ignore"
				var code int
				var b []byte
				var err error
				// A few tries: a loaded 2-core apiserver can time out a request.
				for try := 0; try < 5; try++ {
					code, b, err = do("POST", path, p.Body, "application/json")
					if err == nil && code != 429 && code < 500 {
						break
					}
					time.Sleep(time.Duration(try+1) * 500 * time.Millisecond)
				}
				switch {
				case err == nil && code == 201:
					created.Add(1)
				case err == nil && code == 409:
					existed.Add(1)
				default:
					firstErr.CompareAndSwap(nil, fmt.Sprintf("pod %d (%s/%s): %d %v %.300s", i, p.Namespace, p.Name, code, err, b))
					return
				}
				if c := created.Load(); c%10000 == 0 {
					fmt.Fprintf(os.Stderr, "loader: %d pods created, %.0f s\n", c, time.Since(t0).Seconds())
				}
			}
		}()
	}
	wg.Wait()
	if e := firstErr.Load(); e != nil {
		fail("%s", e)
	}
	secs := time.Since(t0).Seconds()
	out, _ := json.Marshal(map[string]any{
		"pods": *n, "created": created.Load(), "existed": existed.Load(), "nodes": *nodes,
		"bytes_sent": sent.Load(), "avg_bytes_sent": sent.Load() / max(created.Load(), 1),
		"seconds": secs, "created_per_s": float64(created.Load()) / secs, "in_flight": *conc,
	})
	fmt.Println(string(out))
}

func fail(f string, a ...any) {
	fmt.Fprintf(os.Stderr, "loader: "+f+"\n", a...)
	os.Exit(1)
}
