// Command suite is `make bench`'s side-by-side benchmark: it builds weir
// (from the checkout above this module), kfake and nats-server, runs every
// performance case against them and the machine's limits, and writes
// docs/benchmarks.md with its charts (and the raw run as JSON beside them,
// so the page can be rendered again with -render).
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/weir-project/weir/bench/internal/peer"
	"github.com/weir-project/weir/bench/internal/report"
	"github.com/weir-project/weir/bench/internal/suite"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run() error {
	quick := flag.Bool("quick", false, "smoke run: one record size, short runs, small volumes (a minute or two)")
	cases := flag.String("cases", "", "regexp of the cases to run (ids like produce/1KiB/p8/c1/acks1, produce-fsync, "+
		"cluster, latency, sustained, partitions, recovery); empty: all")
	rounds := flag.Int("rounds", 0, "rounds per case (0: 3, quick 2)")
	duration := flag.Duration("duration", 0, "each produce run (0: 3s, quick 0.7s)")
	out := flag.String("out", "../docs", "directory of benchmarks.md (charts go to its benchmarks/)")
	weirSrc := flag.String("weir-src", "..", "weir checkout to build")
	tmp := flag.String("tmp", os.TempDir(), "where the brokers' temp data dirs go")
	warm := flag.String("warm", "auto", "touch and free 3x a run's byte cap before each produce run: "+
		"auto (when a virtio-balloon reports free pages to the host), on or off")
	render := flag.String("render", "", "only render the page again from this saved run (benchmarks/run.json)")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))

	if *render != "" {
		r, err := report.Load(*render)
		if err != nil {
			return err
		}
		return write(r, *out)
	}
	cfg := suite.Defaults(*quick)
	if *rounds > 0 {
		cfg.Rounds = *rounds
	}
	if *duration > 0 {
		cfg.Duration = *duration
	}
	if *cases != "" {
		re, err := regexp.Compile(*cases)
		if err != nil {
			return fmt.Errorf("-cases: %w", err)
		}
		cfg.Cases = re
	}
	if *warm != "auto" && *warm != "on" && *warm != "off" {
		return fmt.Errorf("-warm %q: want auto, on or off", *warm)
	}
	cfg.Log = log
	cfg.Command = "make bench" + commandFlags()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	work, err := os.MkdirTemp(*tmp, "weir-bench-")
	if err != nil {
		return fmt.Errorf("work dir: %w", err)
	}
	defer os.RemoveAll(work)
	cfg.Tmp = work
	src, err := filepath.Abs(*weirSrc)
	if err != nil {
		return err
	}
	here, err := os.Getwd()
	if err != nil {
		return err
	}
	machine := suite.Machine(src, here, work)
	if *warm == "on" || *warm == "auto" && machine.FreePageReporting {
		cfg.Warm = 3 * cfg.MaxBytes
	}
	log.Info("building peers", "weir", src)
	bins, err := peer.Build(ctx, src, here, filepath.Join(work, "bin"))
	if err != nil {
		return err
	}
	start := time.Now()
	r, err := suite.New(cfg, bins, machine).Run(ctx)
	if err != nil {
		return err
	}
	r.Machine.LoadEnd = suite.Load()
	log.Info("suite done", "took", time.Since(start).Round(time.Second))
	return write(r, *out)
}

// commandFlags is how the run was asked for, for the page.
func commandFlags() string {
	var fs []string
	flag.Visit(func(f *flag.Flag) {
		if f.Name != "out" && f.Name != "weir-src" && f.Name != "tmp" {
			fs = append(fs, "-"+f.Name+"="+f.Value.String())
		}
	})
	if len(fs) == 0 {
		return ""
	}
	return " BENCH_FLAGS='" + strings.Join(fs, " ") + "'"
}

// write saves the run, draws the charts and renders the page.
func write(r *report.Run, out string) error {
	chartDir := filepath.Join(out, "benchmarks")
	if err := os.MkdirAll(chartDir, 0o755); err != nil {
		return fmt.Errorf("chart dir: %w", err)
	}
	if err := r.Save(filepath.Join(chartDir, "run.json")); err != nil {
		return err
	}
	charts, err := report.Charts(r, chartDir, "benchmarks")
	if err != nil {
		return err
	}
	page := filepath.Join(out, "benchmarks.md")
	if err := os.WriteFile(page, []byte(report.Render(r, charts)), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", page, err)
	}
	fmt.Println("wrote", page)
	return nil
}
