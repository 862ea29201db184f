package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// runSummary is what the CLI reads of GET /v1/runs/{id} (runs.Summary).
type runSummary struct {
	ID         string    `json:"id"`
	Name       string    `json:"name"`
	Status     string    `json:"status"`
	StopReason string    `json:"stop_reason"`
	StopDetail string    `json:"stop_detail"`
	Created    time.Time `json:"created"`
	Updated    time.Time `json:"updated"`
	Rounds     int       `json:"rounds"`
	InputSeq   uint64    `json:"input_seq"` // POST /v1/runs/{id}/input only
	Speaker    string    `json:"speaker"`
	Waiting    *struct {
		Prompt string `json:"prompt"`
	} `json:"waiting"`
	Usage map[string]struct {
		Total int64 `json:"total_tokens"`
		Calls int   `json:"calls"`
	} `json:"usage"`
	Transcript []struct {
		Sender  string `json:"sender"`
		Content string `json:"content"`
	} `json:"transcript"`
}

// runRun starts a flow and prints its transcript as it happens, with the
// speaker choices and tool calls, until the run stops or waits for a human.
var runRun = cliCommand("run", "FLOW INPUT", 2, 2, nil, func(c *client, args []string, out io.Writer) error {
	var sum runSummary
	raw, err := c.do("POST", "/v1/runs", map[string]string{"flow": args[0], "input": args[1]}, &sum)
	if err != nil {
		return err
	}
	if !c.json {
		fmt.Fprintf(out, "run %s of flow %s\n", sum.ID, sum.Name)
	} else {
		printRaw(out, raw)
	}
	return followRun(c, sum.ID, 0, out)
})

// followRun prints a run's events after seq after until its stop, or until
// it waits.
func followRun(c *client, id string, after uint64, out io.Writer) error {
	return c.stream("GET", fmt.Sprintf("/v1/runs/%s/events?after=%d", url.PathEscape(id), after), nil, func(event string, data []byte) bool {
		if c.json {
			fmt.Fprintf(out, "%s\n", data)
			return event != "human_input_wait"
		}
		var ev struct {
			Data map[string]any `json:"data"`
		}
		json.Unmarshal(data, &ev)
		d := func(k string) string { s, _ := ev.Data[k].(string); return s }
		switch event {
		case "message", "human_input":
			sender := d("sender")
			if sender == "" {
				sender = "human"
			}
			fmt.Fprintf(out, "%s: %s\n", sender, d("content"))
		case "speaker_choice":
			fmt.Fprintf(out, "→ %s (%s)\n", d("speaker"), d("reason"))
		case "tool_call":
			args, _ := json.Marshal(ev.Data["arguments"])
			fmt.Fprintf(out, "  %s calls %s %s\n", d("participant"), d("tool"), oneLine(string(args), 200))
		case "tool_result":
			if e := d("error"); e != "" {
				fmt.Fprintf(out, "  ✗ %s: %s\n", d("error_code"), oneLine(e, 200))
			}
		case "human_input_wait":
			fmt.Fprintf(out, "waiting for you: answer with  host runs %s --say \"...\"\n", id)
			return false
		case "stop":
			fmt.Fprintf(out, "stopped: %s", d("reason"))
			if det := d("detail"); det != "" {
				fmt.Fprintf(out, " (%s)", det)
			}
			fmt.Fprintln(out)
		}
		return true
	})
}

// runsFlags are the flags of one run of `host runs`.
type runsFlags struct {
	say    string
	stop   bool
	follow bool
}

func runRuns(args []string, stdout, stderr io.Writer) int {
	var f runsFlags
	return cliCommand("runs", "[ID [--say TEXT | --stop | --follow]]", 0, 1, f.bind, f.run)(args, stdout, stderr)
}

func (f *runsFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&f.say, "say", "", "post this message into the run, which waits for a human, and follow it")
	fs.BoolVar(&f.stop, "stop", false, "stop the run (stop reason external_stop)")
	fs.BoolVar(&f.follow, "follow", false, "follow the run's events until it stops or waits")
}

func (f *runsFlags) run(c *client, args []string, out io.Writer) error {
	if len(args) == 0 {
		if f.say != "" || f.stop || f.follow {
			return usageError{"--say, --stop and --follow need a run id"}
		}
		return listRuns(c, out)
	}
	id := args[0]
	path := "/v1/runs/" + url.PathEscape(id)
	var sum runSummary
	var raw []byte
	var err error
	switch {
	case f.say != "":
		if _, err = c.do("POST", path+"/input", map[string]string{"message": f.say}, &sum); err != nil {
			return err
		}
		return followRun(c, id, sum.InputSeq-1, out) // from the message posted on
	case f.stop:
		raw, err = c.do("POST", path+"/stop", nil, &sum)
	case f.follow:
		return followRun(c, id, 0, out)
	default:
		raw, err = c.do("GET", path, nil, &sum)
	}
	if done, err := c.rawOnly(out, raw, err); done {
		return err
	}
	fmt.Fprintf(out, "run %s of flow %s: %s", sum.ID, sum.Name, sum.Status)
	if sum.StopReason != "" {
		fmt.Fprintf(out, ", stop_reason %s", sum.StopReason)
		if sum.StopDetail != "" {
			fmt.Fprintf(out, " (%s)", sum.StopDetail)
		}
	}
	fmt.Fprintf(out, ", %d rounds\n", sum.Rounds)
	for _, m := range sum.Transcript {
		fmt.Fprintf(out, "%s: %s\n", m.Sender, m.Content)
	}
	if len(sum.Usage) > 0 {
		var parts []string
		for p, u := range sum.Usage {
			parts = append(parts, fmt.Sprintf("%s %d (%d calls)", p, u.Total, u.Calls))
		}
		slices.Sort(parts)
		fmt.Fprintf(out, "tokens: %s\n", strings.Join(parts, ", "))
	}
	return nil
}

func listRuns(c *client, out io.Writer) error {
	var body struct {
		Runs []runSummary `json:"runs"`
	}
	raw, err := c.do("GET", "/v1/runs", nil, &body)
	if done, err := c.rawOnly(out, raw, err); done {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tFLOW\tSTATUS\tROUNDS\tSTOP_REASON\tUPDATED")
	for _, r := range body.Runs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", r.ID, r.Name, r.Status, r.Rounds, r.StopReason, ago(&r.Updated))
	}
	return tw.Flush()
}
