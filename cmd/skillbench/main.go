package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/skillhost/skillhost/internal/bench"
)

func main() {
	quick := flag.Bool("quick", false, "the short run for CI (under 2 minutes)")
	repo := flag.String("repo", ".", "the repository root")
	bin := flag.String("bin", "", "folder holding the host, benchskill, benchrpc and benchmcp binaries (required)")
	out := flag.String("out", "", "folder for results.json, results.md, profiles and logs (required)")
	command := flag.String("command", "", "the command line to print as the way to reproduce the run")
	bareHTTP := flag.String("serve-bare-http", "", "internal: serve path (f), writing the address to this file")
	relay := flag.String("serve-bare-relay", "", "internal: serve path (g), writing the address to this file")
	relaySkill := flag.String("relay-skill", "", "internal: the benchskill binary behind path (g)")
	flag.Parse()
	if *bareHTTP != "" || *relay != "" {
		var err error
		if *bareHTTP != "" {
			err = bench.ServeBareHTTP(*bareHTTP)
		} else {
			err = bench.ServeBareRelay(*relay, *relaySkill)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "skillbench:", err)
			os.Exit(1)
		}
		return
	}
	if *bin == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "usage: skillbench --bin DIR --out DIR [--quick] [--repo DIR]")
		os.Exit(2)
	}
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			fmt.Fprintln(os.Stderr, "skillbench:", err)
			os.Exit(2)
		}
		return a
	}
	cfg := bench.Defaults(*quick)
	cfg.Repo, cfg.Out = abs(*repo), abs(*out)
	b := abs(*bin)
	cfg.HostBin, cfg.SkillBin, cfg.MCPBin = filepath.Join(b, "host"), filepath.Join(b, "benchskill"), filepath.Join(b, "benchmcp")
	cfg.RPCBin = filepath.Join(b, "benchrpc")
	cfg.Command = *command
	if cfg.Command == "" {
		cfg.Command = strings.Join(os.Args, " ")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := bench.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "skillbench:", err)
		os.Exit(1)
	}
	f, err := os.Create(filepath.Join(cfg.Out, "results.md"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "skillbench:", err)
		os.Exit(1)
	}
	res.Markdown(f)
	f.Close()
	res.Markdown(os.Stdout)
}
