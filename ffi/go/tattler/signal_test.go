//go:build cgo

package tattler

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestAProgramClosesCleanlyOnSIGTERM builds ../example (linked as this
// test is), lets it sync from the fake apiserver, sends it a real SIGTERM
// and expects the documented shutdown: every entry printed, "Closed", the
// checkpoint written, exit 0. The library's threads block asynchronous
// signals, so SIGTERM reaches the Go runtime's handler, never a stream
// thread. The next start resumes from the checkpoint: Synced at once.
func TestAProgramClosesCleanlyOnSIGTERM(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "example")
	args := []string{"build", "-o", bin}
	if buildTag != "" {
		args = append(args, "-tags", buildTag)
	}
	build := exec.Command("go", append(args, "../example")...)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ../example: %v\n%s", err, out)
	}
	f := startFake(t)
	state := filepath.Join(t.TempDir(), "checkpoint.json")
	cmd := exec.Command(bin, "-checkpoint", state, "-server", f.URL, "pods")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			lines <- s.Text()
		}
	}()
	var got []string
	timeout := time.After(wait)
	for synced := false; !synced; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the example ended before Synced: %q\n%s", got, stderr.String())
			}
			got = append(got, l)
			synced = strings.HasPrefix(l, "Synced v1/pods ")
		case <-timeout:
			cmd.Process.Kill()
			t.Fatalf("no Synced line: %q", got)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for l := range lines {
		got = append(got, l)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(wait):
		cmd.Process.Kill()
		t.Fatal("the example did not exit after SIGTERM")
	}
	if err != nil {
		t.Fatalf("exit after SIGTERM: %v (a tattler thread would die of it: signal: terminated)\n%q\n%s", err, got, stderr.String())
	}
	var adds []string
	for _, l := range got[:len(f.Seeded)] {
		adds = append(adds, l)
	}
	sort.Strings(adds)
	var want []string
	for key, rv := range f.Seeded {
		want = append(want, "Add "+key+" "+itoa(rv))
	}
	sort.Strings(want)
	if strings.Join(adds, "\n") != strings.Join(want, "\n") || got[len(got)-1] != "Closed" || len(got) != len(want)+2 {
		t.Fatalf("printed %q, want the Adds %q, Synced, Closed", got, want)
	}
	if !strings.Contains(stderr.String(), "signal: stopped") {
		t.Errorf("stderr: %s", stderr.String())
	}
	var cp struct {
		Version   int `json:"tattler_checkpoint"`
		Resources []struct {
			Objects []json.RawMessage `json:"objects"`
		} `json:"resources"`
	}
	raw, err := os.ReadFile(state)
	if err != nil || json.Unmarshal(raw, &cp) != nil || cp.Version != 1 || len(cp.Resources) != 1 ||
		len(cp.Resources[0].Objects) != len(f.Seeded) {
		t.Fatalf("the checkpoint: %v %s", err, raw)
	}
	// The next start resumes from it: Synced at once, nothing else.
	out, err := exec.Command(bin, "-until-synced", "-checkpoint", state, "-server", f.URL, "pods").Output()
	if err != nil || string(out) != got[len(got)-2]+"\nClosed\n" {
		t.Fatalf("resumed: %v %q, want %q then Closed", err, out, got[len(got)-2])
	}
}

func itoa(n uint64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
