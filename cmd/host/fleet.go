package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/skillhost/skillhost/pkg/host"
)

// fleetFlags adds the fleet's flags to serve; the returned function makes
// the host's FleetConfig, nil without --state etcd://….
func fleetFlags(fs *flag.FlagSet) func() (*host.FleetConfig, error) {
	var state, id, addr, ca, cert, key, password, token string
	var artifacts, regUser, regPassword, regCA string
	var ttl, settle time.Duration
	var parallel int
	fs.StringVar(&state, "state", os.Getenv("SKILLHOST_STATE"), "where operator decisions live: empty for --state-dir's file, or etcd://host:port[,host:port]/prefix (etcds:// for TLS) to share them with a fleet (env SKILLHOST_STATE)")
	fs.StringVar(&id, "fleet-id", "", "this host's name in the fleet (default hostname-port)")
	fs.StringVar(&addr, "fleet-address", "", "the address other hosts and operators reach this host at (default the listen address)")
	fs.DurationVar(&ttl, "fleet-lease", 5*time.Second, "how long a host that died stays listed in the fleet")
	fs.StringVar(&ca, "etcd-ca", "", "PEM file of the CA that signs etcd's certificate (default: system roots)")
	fs.StringVar(&cert, "etcd-cert", "", "PEM file of the client certificate for etcd")
	fs.StringVar(&key, "etcd-key", "", "PEM file of the client certificate's key (mode 0600)")
	fs.StringVar(&password, "etcd-password-file", "", "file (mode 0600) holding the password of the user named in --state (etcd://user@host:port/…)")
	fs.StringVar(&token, "etcd-token-file", "", "file (mode 0600) holding an etcd auth token, instead of a user and password")
	fs.StringVar(&artifacts, "artifacts", os.Getenv("SKILLHOST_ARTIFACTS"), "OCI repository of the fleet's skill artifacts, oci://host[:port]/repository (oci+http:// without TLS); hosts install what host push records (env SKILLHOST_ARTIFACTS)")
	fs.IntVar(&parallel, "rollout-parallel", 1, "how many hosts of the fleet swap to a pushed version at the same time")
	fs.DurationVar(&settle, "rollout-settle", 3*time.Second, "how long a host must serve a pushed version healthily before the next host swaps")
	fs.StringVar(&regUser, "registry-user", "", "user name for the OCI registry")
	fs.StringVar(&regPassword, "registry-password-file", "", "file (mode 0600) holding the OCI registry's password or token")
	fs.StringVar(&regCA, "registry-ca", "", "PEM file of the CA that signs the OCI registry's certificate (default: system roots)")
	return func() (*host.FleetConfig, error) {
		fc, err := host.ParseFleetState(state)
		if fc == nil || err != nil {
			if err == nil && id+addr+ca+cert+key+password+token+artifacts+regUser+regPassword+regCA != "" {
				err = fmt.Errorf("the fleet and etcd flags need --state etcd://…")
			}
			return nil, err
		}
		fc.ID, fc.Address, fc.LeaseTTL = id, addr, ttl
		fc.MaxParallel, fc.Settle = parallel, settle
		fc.Etcd.CAFile, fc.Etcd.CertFile, fc.Etcd.KeyFile = ca, cert, key
		fc.Etcd.PasswordFile, fc.Etcd.TokenFile = password, token
		if fc.Artifacts, err = host.ParseArtifacts(artifacts); err != nil {
			return nil, err
		}
		if fc.Artifacts != nil {
			fc.Artifacts.Username, fc.Artifacts.PasswordFile, fc.Artifacts.CAFile = regUser, regPassword, regCA
		} else if regUser+regPassword+regCA != "" {
			return nil, fmt.Errorf("the registry flags need --artifacts oci://…")
		}
		return fc, nil
	}
}

// runFleet is `host fleet`: the hosts of the daemon's fleet and, per
// skill, which hosts serve which build.
var runFleet = cliCommand("fleet", "", 0, 0, nil, func(c *client, _ []string, out io.Writer) error {
	var v host.FleetView
	raw, err := c.do("GET", "/v1/fleet", nil, &v)
	if done, err := c.rawOnly(out, raw, err); done {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "HOST\tADDRESS\tREADY\tSKILLS\tUPDATED\n")
	for _, h := range v.Hosts {
		fmt.Fprintf(tw, "%s\t%s\t%v\t%d\t%s\n", h.ID, h.Address, h.Ready, len(h.Skills), h.Updated.Format(time.RFC3339))
	}
	fmt.Fprintf(tw, "\nSKILL\tVERSION\tDIGEST\tHOSTS\tDECISION\n")
	for _, name := range slices.Sorted(maps.Keys(v.Skills)) {
		d := v.State[name]
		note := ""
		if d.Disabled {
			note = "disabled"
		}
		if d.Pin != "" {
			note = strings.TrimSpace(note + " pinned to " + d.Pin)
		}
		for _, b := range v.Skills[name].Digests {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", name, b.Version, shortDigest(b.Digest), strings.Join(b.Hosts, ","), note)
		}
	}
	if len(v.Desired) > 0 {
		fmt.Fprintf(tw, "\nSKILL\tDESIRED\tDIGEST\tNOTE\n")
		for _, name := range slices.Sorted(maps.Keys(v.Desired)) {
			d := v.Desired[name]
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, d.Version, shortDigest(d.Digest), firstLine(d.RolledBack))
		}
	}
	for _, h := range v.Hosts {
		for _, name := range slices.Sorted(maps.Keys(h.Artifacts)) {
			if a := h.Artifacts[name]; a.Error != "" {
				fmt.Fprintf(tw, "%s: %s %s refused: %s\n", h.ID, name, a.Version, firstLine(a.Error))
			}
		}
	}
	fmt.Fprintf(tw, "\nrevision %d\n", v.Revision)
	return tw.Flush()
})

// shortDigest keeps a digest readable in a table: sha256: and 12 hex.
func shortDigest(d string) string {
	if len(d) > len("sha256:")+12 {
		return d[:len("sha256:")+12]
	}
	return d
}

// runPush is `host push VERSION_FOLDER`: pack the folder as an OCI
// artifact, push it, and record its digest as the skill's desired version
// in the fleet, which every host then pulls, verifies and installs.
func runPush(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("push", flag.ContinueOnError)
	fs.SetOutput(stderr)
	mk := fleetFlags(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: host push --state etcd://… --artifacts oci://… VERSION_FOLDER")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return exitUsage
	}
	if len(pos) != 1 {
		fs.Usage()
		return exitUsage
	}
	fc, err := mk()
	if err == nil && fc == nil {
		err = fmt.Errorf("push needs --state etcd://… (the fleet to tell)")
	}
	if err != nil {
		fmt.Fprintf(stderr, "host push: %v\n", err)
		return exitUsage
	}
	version, digest, err := host.PushArtifact(context.Background(), *fc, pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "host push: %v\n", err)
		return exitFailure
	}
	fmt.Fprintf(stdout, "pushed %s as %s; desired in the fleet\n", version, digest)
	return exitOK
}
