//go:build cgo

package tattler

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeServe is the fake apiserver binary: $TATTLER_FAKEAPI, or the debug
// build of the ffi crate's fakeapi_serve example (built here if missing).
func fakeServe(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("TATTLER_FAKEAPI"); p != "" {
		return p
	}
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "target", "debug", "examples", "fakeapi_serve")
	if _, err := os.Stat(bin); err != nil {
		build := exec.Command("cargo", "build", "-p", "tattler-ffi", "--example", "fakeapi_serve")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building the fake apiserver: %v\n%s", err, out)
		}
	}
	return bin
}

// fake is a running fake apiserver process, driven over its stdin.
type fake struct {
	URL    string
	Seeded map[string]uint64 // "default/pod-1" -> its resourceVersion
	in     io.WriteCloser
	out    *bufio.Scanner
	cmd    *exec.Cmd
}

func startFake(t *testing.T, args ...string) *fake {
	t.Helper()
	cmd := exec.Command(fakeServe(t), args...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f := &fake{Seeded: map[string]uint64{}, in: in, out: bufio.NewScanner(out), cmd: cmd}
	t.Cleanup(func() {
		in.Close() // the server exits when its stdin closes
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Error("the fake apiserver did not exit")
		}
	})
	f.URL = f.line(t)
	for {
		l := f.line(t)
		if l == "ready" {
			break
		}
		var key string
		var rv uint64
		if _, err := fmt.Sscanf(l, "seeded %s %d", &key, &rv); err != nil {
			t.Fatalf("fake apiserver said %q: %v", l, err)
		}
		f.Seeded[key] = rv
	}
	return f
}

func (f *fake) line(t *testing.T) string {
	t.Helper()
	got := make(chan bool, 1)
	go func() { got <- f.out.Scan() }()
	select {
	case ok := <-got:
		if !ok {
			t.Fatalf("the fake apiserver closed its output: %v", f.out.Err())
		}
		return f.out.Text()
	case <-time.After(10 * time.Second):
		t.Fatal("the fake apiserver said nothing for 10 s")
	}
	return ""
}

// do sends one command and returns the resourceVersion of its "ok RV" answer.
func (f *fake) do(t *testing.T, command string) uint64 {
	t.Helper()
	if _, err := fmt.Fprintln(f.in, command); err != nil {
		t.Fatal(err)
	}
	answer := f.line(t)
	rv, ok := strings.CutPrefix(answer, "ok")
	if !ok {
		t.Fatalf("%s: %s", command, answer)
	}
	if rv = strings.TrimSpace(rv); rv == "" {
		return 0
	}
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
