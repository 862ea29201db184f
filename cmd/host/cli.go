package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/skillhost/skillhost/pkg/api"
)

// cliCommand builds a command that talks to the daemon: it parses the common
// flags and hands the rest to run.
func cliCommand(name, usage string, minArgs, maxArgs int, setup func(fs *flag.FlagSet), run func(c *client, args []string, stdout io.Writer) error) func([]string, io.Writer, io.Writer) int {
	return func(args []string, stdout, stderr io.Writer) int {
		fs := flag.NewFlagSet(name, flag.ContinueOnError)
		fs.SetOutput(stderr)
		mk := clientFlags(fs)
		if setup != nil {
			setup(fs)
		}
		fs.Usage = func() {
			fmt.Fprintf(stderr, "usage: host %s %s\n", name, usage)
			fs.PrintDefaults()
		}
		pos, err := parseInterspersed(fs, args)
		if err != nil {
			return exitUsage
		}
		if len(pos) < minArgs || (maxArgs >= 0 && len(pos) > maxArgs) {
			fs.Usage()
			return exitUsage
		}
		c, err := mk()
		if err != nil {
			fmt.Fprintf(stderr, "host %s: %v\n", name, err)
			return exitUsage
		}
		return exitCode(stderr, name, run(c, pos, stdout))
	}
}

// parseInterspersed parses flags wherever they stand among the positional
// arguments (host skills calc --json), which package flag alone stops at.
// After "--" everything is positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

func printRaw(w io.Writer, raw []byte) { fmt.Fprintln(w, strings.TrimSpace(string(raw))) }

// rawOnly prints the daemon's JSON under --json and reports whether the
// command is done (an error, or --json).
func (c *client) rawOnly(out io.Writer, raw []byte, err error) (bool, error) {
	if c.json && len(raw) > 0 {
		printRaw(out, raw)
	}
	return err != nil || c.json, err
}

var runSkills = cliCommand("skills", "[NAME]", 0, 1, nil, func(c *client, args []string, out io.Writer) error {
	var list []api.Skill
	if len(args) == 1 {
		var st api.Skill
		raw, err := c.do("GET", "/v1/skills/"+url.PathEscape(args[0]), nil, &st)
		if done, err := c.rawOnly(out, raw, err); done {
			return err
		}
		list = []api.Skill{st}
	} else {
		var body api.SkillList
		raw, err := c.do("GET", "/v1/skills", nil, &body)
		if done, err := c.rawOnly(out, raw, err); done {
			return err
		}
		list = body.Skills
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SKILL\tKIND\tVERSION\tSTATE\tPID\tUPTIME\tIN-FLIGHT\tRESTARTS\tUSES\tNOTE")
	for _, s := range list {
		note := s.Reason
		if s.Disabled {
			note = "disabled"
		}
		if s.Pinned != "" {
			note = strings.TrimSpace(note + " pinned to " + s.Pinned)
		}
		for _, v := range s.Versions {
			n := note
			if v.LastError != "" {
				n = firstLine(v.LastError)
			} else if len(v.Problems) > 0 {
				n = v.Problems[0].String()
			}
			pid := "-"
			if v.PID != 0 {
				pid = fmt.Sprint(v.PID)
			}
			uses := "-"
			if len(v.Uses) > 0 {
				uses = strings.Join(v.Uses, ",")
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\n", s.Name, kindOf(s), v.Version, v.State, pid, ago(v.StartedAt), v.InFlight, v.Restarts, uses, n)
		}
	}
	return tw.Flush()
})

// kindOf is a skill's kind for the table; a daemon too old to say is serving binaries.
func kindOf(s api.Skill) string {
	if s.Kind == "" {
		return api.KindBinary
	}
	return s.Kind
}

// firstLine is the first line of s, cut to 100 characters (runes, never
// inside one: descriptions are often Chinese).
func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > 100 {
		s = string(r[:100]) + "…"
	}
	return s
}

// toolsFlags are the flags of one run of `host tools`.
type toolsFlags struct {
	toolsQuery, toolsTags string
	toolsLimit            int
}

func runTools(args []string, stdout, stderr io.Writer) int {
	var f toolsFlags
	return cliCommand("tools", "[-q TEXT] [--tag T] [--limit N]", 0, 0, f.bind, f.list)(args, stdout, stderr)
}

func (f *toolsFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&f.toolsQuery, "q", "", "rank tools for this text")
	fs.StringVar(&f.toolsTags, "tag", "", "only tools with this tag (comma-separated: any of them)")
	fs.IntVar(&f.toolsLimit, "limit", 0, "at most this many tools")
}

func (f *toolsFlags) list(c *client, _ []string, out io.Writer) error {
	v := url.Values{}
	if f.toolsQuery != "" {
		v.Set("q", f.toolsQuery)
	}
	if f.toolsTags != "" {
		v.Set("tags", f.toolsTags)
	}
	if f.toolsLimit > 0 {
		v.Set("limit", fmt.Sprint(f.toolsLimit))
	}
	var body struct {
		Tools []struct {
			Name        string   `json:"name"`
			Version     string   `json:"version"`
			Description string   `json:"description"`
			Tags        []string `json:"tags"`
			Available   bool     `json:"available"`
			Score       *float64 `json:"score"`
		} `json:"tools"`
	}
	raw, err := c.do("GET", "/v1/tools?"+v.Encode(), nil, &body)
	if done, err := c.rawOnly(out, raw, err); done {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tVERSION\tSCORE\tTAGS\tDESCRIPTION")
	for _, t := range body.Tools {
		score := "-"
		if t.Score != nil {
			score = fmt.Sprintf("%.2f", *t.Score)
		}
		name := t.Name
		if !t.Available {
			name += " (unavailable)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", name, t.Version, score, strings.Join(t.Tags, ","), firstLine(t.Description))
	}
	return tw.Flush()
}

var runCall = cliCommand("call", "NAME ['{json arguments}' | - to read them from stdin]", 1, 2, nil, func(c *client, args []string, out io.Writer) error {
	argText := "{}"
	if len(args) == 2 {
		argText = args[1]
	}
	if argText == "-" {
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			return err
		}
		argText = string(b)
	}
	if !json.Valid([]byte(argText)) {
		return usageError{"arguments are not valid JSON: " + argText}
	}
	raw, err := c.do("POST", "/v1/tools/"+url.PathEscape(args[0])+"/invoke", map[string]json.RawMessage{"arguments": json.RawMessage(argText)}, nil)
	if err != nil {
		if c.json {
			printRaw(out, raw)
		}
		return err
	}
	if c.json {
		printRaw(out, raw)
		return nil
	}
	var body struct {
		Result json.RawMessage `json:"result"`
	}
	json.Unmarshal(raw, &body)
	var pretty any
	json.Unmarshal(body.Result, &pretty)
	b, _ := json.MarshalIndent(pretty, "", "  ")
	fmt.Fprintln(out, string(b))
	return nil
})

var runRescan = cliCommand("rescan", "", 0, 0, nil, func(c *client, _ []string, out io.Writer) error {
	raw, err := c.do("POST", "/v1/rescan", nil, nil)
	if done, err := c.rawOnly(out, raw, err); done {
		return err
	}
	fmt.Fprintln(out, "rescanned")
	return nil
})

func skillAction(name, method, suffix string, body func(args []string) any) func([]string, io.Writer, io.Writer) int {
	usage := "NAME"
	min := 1
	if name == "pin" {
		usage, min = "NAME VERSION", 2
	}
	return cliCommand(name, usage, min, min, nil, func(c *client, args []string, out io.Writer) error {
		var b any
		if body != nil {
			b = body(args)
		}
		var st api.Skill
		raw, err := c.do(method, "/v1/skills/"+url.PathEscape(args[0])+suffix, b, &st)
		if done, err := c.rawOnly(out, raw, err); done {
			return err
		}
		active := st.Active
		if active == "" {
			active = "nothing (" + st.Reason + ")"
		}
		fmt.Fprintf(out, "%s: %s done; serving %s\n", st.Name, name, active)
		return nil
	})
}

var (
	runEnable  = skillAction("enable", "POST", "/enable", nil)
	runDisable = skillAction("disable", "POST", "/disable", nil)
	runPin     = skillAction("pin", "PUT", "/pin", func(a []string) any { return map[string]string{"version": a[1]} })
	runUnpin   = skillAction("unpin", "DELETE", "/pin", nil)
)

var runEvents = cliCommand("events", "", 0, 0, nil, func(c *client, _ []string, out io.Writer) error {
	return c.stream("GET", "/v1/events", nil, func(event string, data []byte) bool {
		if c.json {
			fmt.Fprintf(out, "{\"event\":%q,\"data\":%s}\n", event, data)
			return true
		}
		if event == "state" {
			var st struct {
				Skills []api.Skill `json:"skills"`
				Tools  int         `json:"tools"`
			}
			json.Unmarshal(data, &st)
			fmt.Fprintf(out, "state: %d skills, %d tools\n", len(st.Skills), st.Tools)
			return true
		}
		var e struct {
			Time    string `json:"time"`
			Skill   string `json:"skill"`
			Version string `json:"version"`
			From    string `json:"from"`
			State   string `json:"state"`
			Reason  string `json:"reason"`
			Tools   int    `json:"tools"`
			Calls   uint64 `json:"calls"`
			// nested_call
			Caller, Tool, Code string
			CallID             string `json:"call_id"`
			ParentCallID       string `json:"parent_call_id"`
		}
		json.Unmarshal(data, &e)
		if event == "calls" {
			fmt.Fprintf(out, "%s %-9s %d so far\n", e.Time, event, e.Calls)
			return true
		}
		if event == "nested_call" {
			fmt.Fprintf(out, "%s %-9s %s -> %s %s (call %s, parent %s)\n", e.Time, event, e.Caller, e.Tool, e.Code, e.CallID, e.ParentCallID)
			return true
		}
		line := fmt.Sprintf("%s %-9s %s@%s %s", e.Time, event, e.Skill, e.Version, e.State)
		if e.From != "" {
			line = fmt.Sprintf("%s %-9s %s@%s %s -> %s", e.Time, event, e.Skill, e.Version, e.From, e.State)
		}
		if e.Reason != "" {
			line += " (" + firstLine(e.Reason) + ")"
		}
		fmt.Fprintln(out, line)
		return true
	})
})
