package vm_test

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/bwrap"
	"anet.dev/anet/pkg/sandbox/launch"
	"anet.dev/anet/pkg/sandbox/vm"
)

// BenchmarkVMvsBwrap runs the same agent (sleep 1, so QEMU's memory can be read while the
// guest runs) in the bwrap tier and the vm tier (TCG here), side by side in one run, and
// reports the VM's boot-to-agent breakdown (V1's figures; make bench).
func BenchmarkVMvsBwrap(b *testing.B) {
	needHostB(b)
	h := sharedHostB(b)
	// The bwrap backend through the same seam: both runs are gated on a cached probe.
	w, err := launch.New(launch.Options{Backend: bwrap.Name, Self: h.self})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if res, err := h.l.Probe(ctx); err != nil || !res.OK {
		b.Fatalf("vm probe: %v %+v", err, res)
	}
	if res, err := w.Probe(ctx); err != nil || !res.OK {
		b.Fatalf("bwrap probe: %v %+v", err, res)
	}
	spec := func(id string) sandbox.Spec {
		return sandbox.Spec{ID: id, Mode: sandbox.ModeSandbox, Argv: []string{"/bin/sleep", "1"}, RunRoot: h.runRoot}
	}
	var bw, vmTotal, boot time.Duration
	var sum vm.Timings
	var rssKiB int64
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		r, err := w.Start(ctx, spec("bench-bwrap-"+strconv.Itoa(i)), sandbox.Stdio{})
		if err != nil {
			b.Fatal(err)
		}
		if o := r.Wait(); o.ExitCode != 0 {
			b.Fatalf("bwrap run %+v", o)
		}
		bw += time.Since(t0)

		t0 = time.Now()
		var se bytes.Buffer
		r, err = h.l.Start(ctx, spec("bench-vm-"+strconv.Itoa(i)), sandbox.Stdio{Stderr: &se})
		if err != nil {
			b.Fatal(err)
		}
		boot += time.Since(t0)
		for _, p := range descendantsNamed(os.Getpid(), "qemu-system") {
			rssKiB = max(rssKiB, statusKiB(p, "VmRSS"))
		}
		if o := r.Wait(); o.ExitCode != 0 {
			b.Fatalf("vm run %+v: %s", o, se.String())
		}
		vmTotal += time.Since(t0)
		t := r.(interface{ Timings() vm.Timings }).Timings()
		sum.QEMU += t.QEMU
		sum.Kernel += t.Kernel
		sum.Modules += t.Modules
		sum.Link += t.Link
		sum.Shares += t.Shares
		sum.Setup += t.Setup
	}
	n := float64(b.N)
	msPer := func(d time.Duration) float64 { return float64(d.Milliseconds()) / n }
	b.ReportMetric(msPer(bw), "bwrap_run_ms")
	b.ReportMetric(msPer(vmTotal), "vm_run_ms")
	b.ReportMetric(float64(vmTotal)/float64(bw), "vm/bwrap")
	b.ReportMetric(msPer(boot), "vm_boot_to_agent_ms")
	b.ReportMetric(msPer(sum.QEMU), "qemu_start_ms")
	b.ReportMetric(msPer(sum.Kernel), "kernel_ms")
	b.ReportMetric(msPer(sum.Modules), "modules_ms")
	b.ReportMetric(msPer(sum.Link), "link_ms")
	b.ReportMetric(msPer(sum.Shares), "shares_ms")
	b.ReportMetric(msPer(sum.Setup), "init_setup_ms")
	b.ReportMetric(float64(rssKiB)/1024, "qemu_rss_MiB")
}

func statusKiB(pid int, key string) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == key {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
