package main

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/skillhost/skillhost/sdk"
)

// The tools policyassist calls through the host, which its manifest's uses
// lists (Skill.Uses).
const (
	searchTool = "policy.search_policies"
	calcTool   = "calc.evaluate"
)

type lodgingIn struct {
	City   string `json:"city" jsonschema:"minLength=1,maxLength=50" jsonschema_description:"City of the trip, in Chinese or English, e.g. 上海 or Shanghai."`
	Nights int    `json:"nights" jsonschema:"minimum=1,maximum=365" jsonschema_description:"Number of nights."`
	Grade  string `json:"grade" jsonschema:"enum=staff,enum=manager,enum=director,enum=vp,enum=executive" jsonschema_description:"The employee's grade: staff, manager, director (总监), vp or executive."`
}

type lodgingOut struct {
	Amount     float64 `json:"amount" jsonschema_description:"The most that may be claimed for the whole stay, in CNY."`
	Currency   string  `json:"currency"`
	PerNight   float64 `json:"per_night" jsonschema_description:"The cap per night after any uplift for the grade, in CNY."`
	Nights     int     `json:"nights"`
	CityTier   string  `json:"city_tier" jsonschema_description:"The city's tier as the clause names it, e.g. 一线城市."`
	Uplift     int     `json:"uplift_percent" jsonschema_description:"The uplift for the grade, in percent (0 when none applies)."`
	Expression string  `json:"expression" jsonschema_description:"The sum calc.evaluate computed."`
	Citation   string  `json:"citation" jsonschema_description:"The clause the figures come from, e.g. 《差旅报销制度》第五条."`
	Clause     string  `json:"clause" jsonschema_description:"The clause's text."`
	Answer     string  `json:"answer" jsonschema_description:"The answer in one sentence, with its citation."`
}

func newSkill() *sdk.Skill {
	s := sdk.New("policyassist", "1.0.0",
		"Policy study assistant: answers how much travel lodging (住宿费) an employee may claim for a trip, from the company's "+
			"travel expense policy (差旅报销制度), with the figure and the clause it comes from. It looks the rule up with the "+
			"policy skill and has the calc skill do the sum.")
	// Not "policy" or "制度": the policy-officer agent profile (examples/agents.json)
	// selects those tags, and its filter would refuse the calc call this
	// skill makes (a nested call runs under its caller's scope).
	s.Tags = []string{"travel", "报销", "assistant"}
	s.Author = "skillhost examples"
	s.Uses = []string{calcTool, searchTool}
	sdk.Tool(s, "lodging_allowance",
		"How much lodging (住宿费) may an employee claim for a trip: give the city, the number of nights and the grade "+
			"(staff, manager, director 总监, vp, executive), e.g. a director, 3 nights in Shanghai. Returns the total in CNY, "+
			"the cap per night, and the policy clause it comes from, to quote.",
		lodging, sdk.ReadOnly(), sdk.WithTags("lodging", "住宿", "allowance"))
	return s
}

func main() { newSkill().Serve() }

type clause struct {
	Citation string `json:"citation"`
	Heading  string `json:"heading"`
	Text     string `json:"text"`
}

type searchOut struct {
	Results []clause `json:"results"`
}

type evalOut struct {
	Result float64 `json:"result"`
}

func lodging(ctx context.Context, in lodgingIn) (lodgingOut, error) {
	city := canonicalCity(in.City)
	found, err := sdk.CallAs[searchOut](ctx, searchTool, map[string]any{"query": "住宿费报销标准 每人每晚 上限", "document": "travel-expense", "limit": 3})
	if err != nil {
		return lodgingOut{}, fmt.Errorf("looking up the lodging rule: %w", err)
	}
	var rule *lodgingRule
	var src clause
	for _, c := range found.Results {
		if r, ok := parseRule(c.Text); ok {
			rule, src = &r, c
			break
		}
	}
	if rule == nil {
		return lodgingOut{}, sdk.Errorf("no_rule", "the travel expense policy has no clause with lodging caps per city tier (searched %s)", searchTool)
	}
	tier := rule.tierOf(city)
	uplift := 0
	if slices.Contains(upliftGrades, strings.ToLower(in.Grade)) {
		uplift = rule.uplift
	}
	expr := fmt.Sprintf("%d * (1 + %d / 100) * %d", tier.cap, uplift, in.Nights)
	sum, err := sdk.CallAs[evalOut](ctx, calcTool, map[string]string{"expression": expr})
	if err != nil {
		return lodgingOut{}, fmt.Errorf("computing %s: %w", expr, err)
	}
	perNight := float64(tier.cap) * (1 + float64(uplift)/100)
	out := lodgingOut{
		Amount: sum.Result, Currency: "CNY", PerNight: perNight, Nights: in.Nights, CityTier: tier.name, Uplift: uplift,
		Expression: expr, Citation: src.Citation, Clause: src.Text,
	}
	out.Answer = fmt.Sprintf("A %s may claim at most %s CNY for %d nights of lodging in %s (%s: %d CNY a night", in.Grade, num(sum.Result), in.Nights, city, tier.name, tier.cap)
	if uplift > 0 {
		out.Answer += fmt.Sprintf(", raised by %d%% for the grade to %s", uplift, num(perNight))
	}
	out.Answer += "), per " + src.Citation + "."
	return out, nil
}

// upliftGrades are the grades the clause's "总监及以上人员" (director and
// above) covers.
var upliftGrades = []string{"director", "vp", "executive"}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// lodgingRule is what the clause says: a cap per city tier and an uplift for
// directors and above.
type lodgingRule struct {
	tiers  []tier
	uplift int // percent
}

type tier struct {
	name   string
	cities []string // named in the clause; empty for a tier defined otherwise
	cap    int
}

var (
	// tierRE reads "一线城市（北京、上海、广州、深圳）600 元" and "其他城市 350 元".
	tierRE   = regexp.MustCompile(`([^\s：:；;，,。]+?城市[^\s（(：:；;，,。\d]*)(?:[（(]([^）)]*)[）)])?\s*(\d+)\s*元`)
	upliftRE = regexp.MustCompile(`总监及以上[^。；;]*?上浮\s*(\d+)\s*%`)
)

func parseRule(text string) (lodgingRule, bool) {
	var r lodgingRule
	for _, m := range tierRE.FindAllStringSubmatch(text, -1) {
		n, err := strconv.Atoi(m[3])
		if err != nil {
			continue
		}
		t := tier{name: m[1], cap: n}
		if m[2] != "" {
			t.cities = strings.FieldsFunc(m[2], func(r rune) bool { return r == '、' || r == ',' || r == '，' })
		}
		r.tiers = append(r.tiers, t)
	}
	if m := upliftRE.FindStringSubmatch(text); m != nil {
		r.uplift, _ = strconv.Atoi(m[1])
	}
	return r, len(r.tiers) > 0 && strings.Contains(text, "住宿")
}

// tierOf finds the city's tier: a tier that names it, else the provincial
// capitals' tier for a capital, else the last (其他城市).
func (r lodgingRule) tierOf(city string) tier {
	for _, t := range r.tiers {
		if slices.Contains(t.cities, city) {
			return t
		}
	}
	if slices.Contains(capitals, city) {
		for _, t := range r.tiers {
			if strings.Contains(t.name, "省会") {
				return t
			}
		}
	}
	return r.tiers[len(r.tiers)-1]
}

// capitals are the provincial capitals and cities with independent
// planning status (省会城市及计划单列市) that the clause does not list.
var capitals = []string{
	"石家庄", "太原", "呼和浩特", "沈阳", "长春", "哈尔滨", "南京", "杭州", "合肥", "福州", "南昌", "济南", "郑州", "武汉", "长沙",
	"南宁", "海口", "成都", "贵阳", "昆明", "拉萨", "西安", "兰州", "西宁", "银川", "乌鲁木齐", "天津", "重庆",
	"大连", "青岛", "宁波", "厦门",
}

// english maps English city names to the names the policy uses.
var english = map[string]string{
	"beijing": "北京", "shanghai": "上海", "guangzhou": "广州", "shenzhen": "深圳", "tianjin": "天津", "chongqing": "重庆",
	"hangzhou": "杭州", "nanjing": "南京", "chengdu": "成都", "wuhan": "武汉", "xian": "西安", "xi'an": "西安",
	"changsha": "长沙", "zhengzhou": "郑州", "jinan": "济南", "shenyang": "沈阳", "harbin": "哈尔滨", "kunming": "昆明",
	"dalian": "大连", "qingdao": "青岛", "ningbo": "宁波", "xiamen": "厦门", "fuzhou": "福州", "hefei": "合肥",
	"suzhou": "苏州", "wuxi": "无锡", "foshan": "佛山", "dongguan": "东莞",
}

func canonicalCity(c string) string {
	c = strings.TrimSpace(c)
	if zh, ok := english[strings.ToLower(c)]; ok {
		return zh
	}
	return strings.TrimSuffix(c, "市")
}
