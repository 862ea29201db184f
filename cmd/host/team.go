package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"
	"text/tabwriter"
)

// teamView is what the CLI reads of GET /v1/teams/{id} (team.TeamView).
type teamView struct {
	ID         string `json:"id"`
	Lead       string `json:"lead"`
	Budget     int64  `json:"budget"`
	TokensUsed int64  `json:"tokens_used"`
	Stopped    bool   `json:"stopped"`
	StopReason string `json:"stop_reason"`
	Members    []struct {
		Name        string `json:"name"`
		Role        string `json:"role"`
		Profile     string `json:"profile"`
		Lead        bool   `json:"lead"`
		Status      string `json:"status"`
		Reason      string `json:"reason"`
		TokensUsed  int64  `json:"tokens_used"`
		Budget      int64  `json:"budget"`
		CurrentTask string `json:"current_task"`
		InboxDepth  int    `json:"inbox_depth"`
	} `json:"members"`
	Tasks []struct {
		ID     string `json:"id"`
		Title  string `json:"title"`
		Status string `json:"status"`
		Owner  string `json:"owner"`
	} `json:"tasks"`
}

const teamUsage = `[SUBCOMMAND ...]
  (none)                       list the teams
  create ID [TASK]             create a team (--profile, --budget) and give its lead TASK
  show ID                      the members with status, inbox depth, tokens and task; the task board
  send ID MEMBER TEXT          send TEXT to MEMBER as the human (--all: to every teammate; then no MEMBER)
  spawn ID NAME                add a teammate (--role, --profile, --budget, --plan-mode)
  stop ID                      stop the team: every member stops
  follow ID                    print the team's log as it happens (--after SEQ)`

// teamFlags are the flags of one run of `host team`.
type teamFlags struct {
	profile, role string
	budget        int64
	all, plan     bool
	after         uint64
}

func runTeam(args []string, stdout, stderr io.Writer) int {
	var f teamFlags
	return cliCommand("team", teamUsage, 0, 4, f.bind, f.run)(args, stdout, stderr)
}

func (f *teamFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&f.profile, "profile", "", "create: the lead's agent profile; spawn: the teammate's")
	fs.StringVar(&f.role, "role", "", "spawn: the teammate's role (frontend, backend, ...)")
	fs.Int64Var(&f.budget, "budget", 0, "create: the team's token budget; spawn: the teammate's (0: none)")
	fs.BoolVar(&f.all, "all", false, "send: broadcast to every teammate")
	fs.BoolVar(&f.plan, "plan-mode", false, "spawn: the teammate starts in plan mode (read-only tools until the lead approves its plan)")
	fs.Uint64Var(&f.after, "after", 0, "follow: start after this event seq")
}

func (f *teamFlags) run(c *client, args []string, out io.Writer) error {
	if len(args) == 0 {
		return listTeams(c, out)
	}
	sub, args := args[0], args[1:]
	need := func(n int, what string) error {
		if len(args) != n {
			return usageError{fmt.Sprintf("host team %s %s", sub, what)}
		}
		return nil
	}
	var path string
	if len(args) > 0 {
		path = "/v1/teams/" + url.PathEscape(args[0])
	}
	var v teamView
	var raw []byte
	var err error
	switch sub {
	case "create":
		if len(args) < 1 || len(args) > 2 {
			return usageError{"host team create ID [TASK]"}
		}
		body := map[string]any{"id": args[0], "lead": map[string]any{"profile": f.profile}, "budget": f.budget}
		if len(args) == 2 {
			body["task"] = args[1]
		}
		raw, err = c.do("POST", "/v1/teams", body, &v)
	case "show":
		if err := need(1, "ID"); err != nil {
			return err
		}
		raw, err = c.do("GET", path, nil, &v)
	case "stop":
		if err := need(1, "ID"); err != nil {
			return err
		}
		raw, err = c.do("POST", path+"/stop", nil, &v)
	case "send":
		body := map[string]any{}
		if f.all {
			if err := need(2, "ID TEXT --all"); err != nil {
				return err
			}
			body["broadcast"], body["text"] = true, args[1]
		} else {
			if err := need(3, "ID MEMBER TEXT"); err != nil {
				return err
			}
			body["to"], body["text"] = args[1], args[2]
		}
		var sent struct {
			ID string `json:"id"`
		}
		raw, err = c.do("POST", path+"/messages", body, &sent)
		if done, err := c.rawOnly(out, raw, err); done {
			return err
		}
		fmt.Fprintf(out, "sent %s\n", sent.ID)
		return nil
	case "spawn":
		if err := need(2, "ID NAME"); err != nil {
			return err
		}
		raw, err = c.do("POST", path+"/members", map[string]any{"name": args[1], "role": f.role, "profile": f.profile,
			"budget": f.budget, "plan_mode": f.plan}, nil)
		if done, err := c.rawOnly(out, raw, err); done {
			return err
		}
		fmt.Fprintf(out, "spawned %s in team %s\n", args[1], args[0])
		return nil
	case "follow":
		if err := need(1, "ID"); err != nil {
			return err
		}
		return followTeam(c, args[0], f.after, out)
	default:
		return usageError{fmt.Sprintf("unknown team subcommand %q: create, show, send, spawn, stop or follow", sub)}
	}
	if done, err := c.rawOnly(out, raw, err); done {
		return err
	}
	printTeam(out, v)
	return nil
}

func printTeam(out io.Writer, v teamView) {
	fmt.Fprintf(out, "team %s, lead %s, %d tokens", v.ID, v.Lead, v.TokensUsed)
	if v.Budget > 0 {
		fmt.Fprintf(out, " of %d", v.Budget)
	}
	if v.Stopped {
		fmt.Fprintf(out, ", stopped (%s)", v.StopReason)
	}
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MEMBER\tROLE\tPROFILE\tSTATUS\tINBOX\tTOKENS\tTASK")
	for _, m := range v.Members {
		status := m.Status
		if m.Reason != "" {
			status += " (" + m.Reason + ")"
		}
		name := m.Name
		if m.Lead {
			name += "*"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\n", name, m.Role, m.Profile, status, m.InboxDepth, m.TokensUsed, m.CurrentTask)
	}
	tw.Flush()
	if len(v.Tasks) > 0 {
		tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "TASK\tSTATUS\tOWNER\tTITLE")
		for _, t := range v.Tasks {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.ID, t.Status, t.Owner, t.Title)
		}
		tw.Flush()
	}
}

func listTeams(c *client, out io.Writer) error {
	var body struct {
		Teams []teamView `json:"teams"`
	}
	raw, err := c.do("GET", "/v1/teams", nil, &body)
	if done, err := c.rawOnly(out, raw, err); done {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tLEAD\tMEMBERS\tTOKENS\tSTOPPED")
	for _, t := range body.Teams {
		stopped := ""
		if t.Stopped {
			stopped = t.StopReason
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", t.ID, t.Lead, len(t.Members), t.TokensUsed, stopped)
	}
	return tw.Flush()
}

// followTeam prints a team's log after seq after, one line per event,
// until the team stops or the daemon ends the stream.
func followTeam(c *client, id string, after uint64, out io.Writer) error {
	return c.stream("GET", fmt.Sprintf("/v1/teams/%s/events?after=%d", url.PathEscape(id), after), nil, func(event string, data []byte) bool {
		if c.json {
			fmt.Fprintf(out, "%s\n", data)
			return event != "team.stopped"
		}
		var ev struct {
			Seq  uint64          `json:"seq"`
			Data json.RawMessage `json:"data"`
		}
		json.Unmarshal(data, &ev)
		fmt.Fprintf(out, "%d %s %s\n", ev.Seq, strings.TrimPrefix(event, "team."), oneLine(string(ev.Data), 200))
		return event != "team.stopped"
	})
}
