package chart

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	chartcommon "helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

const chartDir = "skillhost"

// minimal is what an install must give beyond the chart's defaults: the
// image (none is published) and the API token's Secret.
func minimal() map[string]any {
	return map[string]any{
		"image":    map[string]any{"repository": "registry.example/skillhost"},
		"apiToken": map[string]any{"name": "skillhost-token"},
	}
}

// objects is one rendering of the chart, decoded into the API types.
type objects struct {
	deploy  *appsv1.Deployment
	service *corev1.Service
	pdb     *policyv1.PodDisruptionBudget
	sa      *corev1.ServiceAccount
	cms     []*corev1.ConfigMap
}

// render renders the chart with values over its defaults, as `helm
// template` would, in strict mode (a missing value is an error).
func render(values map[string]any) (map[string]string, error) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		return nil, fmt.Errorf("load chart: %w", err)
	}
	vals, err := chartutil.ToRenderValues(ch, values,
		chartcommon.ReleaseOptions{Name: "sh", Namespace: "skills", IsInstall: true}, nil)
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	return engine.Engine{Strict: true}.RenderWithContext(context.Background(), ch, vals)
}

// decode splits the rendered files into documents and decodes each one
// strictly (an unknown or duplicate field is an error) into its API type.
func decode(files map[string]string) (objects, error) {
	var o objects
	var errs []error
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		if path.Ext(name) != ".yaml" {
			continue
		}
		for i, doc := range strings.Split(files[name], "\n---") {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
				errs = append(errs, fmt.Errorf("%s document %d: %w", name, i, err))
				continue
			}
			var obj any
			switch tm.APIVersion + " " + tm.Kind {
			case "apps/v1 Deployment":
				o.deploy = &appsv1.Deployment{}
				obj = o.deploy
			case "v1 Service":
				o.service = &corev1.Service{}
				obj = o.service
			case "policy/v1 PodDisruptionBudget":
				o.pdb = &policyv1.PodDisruptionBudget{}
				obj = o.pdb
			case "v1 ServiceAccount":
				o.sa = &corev1.ServiceAccount{}
				obj = o.sa
			case "v1 ConfigMap":
				cm := &corev1.ConfigMap{}
				o.cms = append(o.cms, cm)
				obj = cm
			default:
				errs = append(errs, fmt.Errorf("%s document %d: unexpected kind %q of %q", name, i, tm.Kind, tm.APIVersion))
				continue
			}
			if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
				errs = append(errs, fmt.Errorf("%s document %d (%s): %w", name, i, tm.Kind, err))
			}
		}
	}
	for what, missing := range map[string]bool{
		"Deployment": o.deploy == nil, "Service": o.service == nil,
		"PodDisruptionBudget": o.pdb == nil, "ServiceAccount": o.sa == nil,
	} {
		if missing {
			errs = append(errs, fmt.Errorf("the chart rendered no %s", what))
		}
	}
	return o, errors.Join(errs...)
}

func mustRender(t *testing.T, values map[string]any) objects {
	t.Helper()
	files, err := render(values)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	o, err := decode(files)
	if err != nil {
		t.Fatalf("decode:\n%v", err)
	}
	return o
}

func fleetValues(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path.Join(chartDir, "ci", "fleet-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	v := map[string]any{}
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatalf("fleet-values.yaml: %v", err)
	}
	return v
}

// TestDefaultsAloneRefuse: without an image or a token the chart fails
// with the value to set, instead of rendering a pod that cannot start.
func TestDefaultsAloneRefuse(t *testing.T) {
	for _, c := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"no values", nil, "image.repository is required"},
		{"no token", map[string]any{"image": map[string]any{"repository": "r/skillhost"}}, "apiToken.name is required"},
		{"artifacts without etcd", func() map[string]any {
			v := minimal()
			v["artifacts"] = map[string]any{"repository": "oci://registry.example/skills"}
			return v
		}(), "artifacts.repository needs etcd.endpoints"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := render(c.values)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("render error = %v, want one that says %q", err, c.want)
			}
		})
	}
}

// TestChart checks the rendering of the smallest install and of the fleet
// example against what the daemon and a cluster need.
func TestChart(t *testing.T) {
	for _, c := range []struct {
		name   string
		values func(*testing.T) map[string]any
		// secret files the pod must receive, by the flag that names them
		secretFlags []string
		fleet       bool
	}{
		{"minimal", func(*testing.T) map[string]any { return minimal() }, []string{"token-file"}, false},
		{"fleet", fleetValues, []string{
			"token-file", "invoke-token-file", "etcd-password-file", "etcd-ca", "etcd-cert", "etcd-key",
			"registry-password-file", "registry-ca",
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			values := c.values(t)
			o := mustRender(t, values)
			pod := o.deploy.Spec.Template.Spec
			ctr := container(t, pod)
			flags := parseArgs(t, ctr.Args)

			checkNames(t, o)
			checkSelectors(t, o)
			checkProbes(t, ctr)
			checkGrace(t, pod, ctr, flags, values)
			checkSecrets(t, pod, ctr, flags, c.secretFlags)
			checkFlagsKnown(t, flags)
			checkSecurity(t, pod, ctr)

			if c.fleet {
				if got, want := flags["state"], "etcds://skillhost@etcd-0.etcd:2379,etcd-1.etcd:2379,etcd-2.etcd:2379/skillhost"; got != want {
					t.Errorf("--state = %q, want %q", got, want)
				}
				if got := flags["artifacts"]; got != "oci://registry.example/skills" {
					t.Errorf("--artifacts = %q", got)
				}
				if got := flags["skills"]; got != "/var/lib/skillhost/skills" {
					t.Errorf("--skills = %q, want the pod's writable tree that artifacts fill", got)
				}
				if got := flags["fleet-id"]; got != "$(POD_NAME)" {
					t.Errorf("--fleet-id = %q, want the pod's name", got)
				}
				if len(pod.ImagePullSecrets) != 1 || pod.ImagePullSecrets[0].Name != "registry-pull" {
					t.Errorf("imagePullSecrets = %v, want [registry-pull]", pod.ImagePullSecrets)
				}
				if *o.deploy.Spec.Replicas != 3 {
					t.Errorf("replicas = %d, want 3", *o.deploy.Spec.Replicas)
				}
				if len(o.cms) != 1 || !strings.Contains(o.cms[0].Data["agents.yaml"], "read_only") {
					t.Errorf("agents ConfigMap = %v, want the profiles of the values", o.cms)
				}
				if got := flags["agents"]; got != "/etc/skillhost/agents/agents.yaml" {
					t.Errorf("--agents = %q", got)
				}
			} else {
				for _, f := range []string{"state", "artifacts", "fleet-id", "agents"} {
					if _, ok := flags[f]; ok {
						t.Errorf("--%s is passed without fleet values: one pod must stay as simple as one machine", f)
					}
				}
				if len(o.cms) != 0 {
					t.Errorf("a ConfigMap without agents: %v", o.cms)
				}
			}
		})
	}
}

// TestGraceArithmetic: terminationGracePeriodSeconds follows the values.
func TestGraceArithmetic(t *testing.T) {
	v := minimal()
	v["graceSeconds"], v["preStopSleepSeconds"], v["terminationMarginSeconds"] = 90, 7, 3
	o := mustRender(t, v)
	if got := *o.deploy.Spec.Template.Spec.TerminationGracePeriodSeconds; got != 100 {
		t.Errorf("terminationGracePeriodSeconds = %d, want 7 + 90 + 3 = 100", got)
	}
	flags := parseArgs(t, container(t, o.deploy.Spec.Template.Spec).Args)
	if flags["grace"] != "90s" {
		t.Errorf("--grace = %q, want 90s", flags["grace"])
	}
}

func container(t *testing.T, pod corev1.PodSpec) corev1.Container {
	t.Helper()
	if len(pod.Containers) != 1 {
		t.Fatalf("pod has %d containers, want 1", len(pod.Containers))
	}
	return pod.Containers[0]
}

// parseArgs reads `serve --name=value ...` into a map; every flag must be
// given in that form so that it can be checked.
func parseArgs(t *testing.T, args []string) map[string]string {
	t.Helper()
	if len(args) == 0 || args[0] != "serve" {
		t.Fatalf("args = %q, want serve first", args)
	}
	flags := map[string]string{}
	for _, a := range args[1:] {
		name, value, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || !ok {
			t.Errorf("arg %q is not --name=value", a)
			continue
		}
		if _, dup := flags[name]; dup {
			t.Errorf("--%s given twice", name)
		}
		flags[name] = value
	}
	return flags
}

func checkNames(t *testing.T, o objects) {
	t.Helper()
	for kind, m := range map[string]metav1.ObjectMeta{
		"Deployment": o.deploy.ObjectMeta, "Service": o.service.ObjectMeta,
		"PodDisruptionBudget": o.pdb.ObjectMeta, "ServiceAccount": o.sa.ObjectMeta,
	} {
		for _, p := range validation.IsDNS1123Label(m.Name) {
			t.Errorf("%s name %q: %s", kind, m.Name, p)
		}
		for k, v := range m.Labels {
			for _, p := range append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...) {
				t.Errorf("%s label %s=%s: %s", kind, k, v, p)
			}
		}
	}
	if got := o.deploy.Spec.Template.Spec.ServiceAccountName; got != o.sa.Name {
		t.Errorf("pod's service account %q, want the chart's %q", got, o.sa.Name)
	}
}

// checkSelectors: the Deployment, the Service and the PDB all select the
// pods the Deployment makes, and nothing wider than the release.
func checkSelectors(t *testing.T, o objects) {
	t.Helper()
	podLabels := labels.Set(o.deploy.Spec.Template.Labels)
	for what, sel := range map[string]*metav1.LabelSelector{
		"Deployment": o.deploy.Spec.Selector, "PodDisruptionBudget": o.pdb.Spec.Selector,
		"Service": {MatchLabels: o.service.Spec.Selector},
	} {
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			t.Errorf("%s selector: %v", what, err)
			continue
		}
		if s.Empty() || !s.Matches(podLabels) {
			t.Errorf("%s selector %q does not select the pods (labels %v)", what, s, podLabels)
		}
		if !s.Matches(labels.Set{"app.kubernetes.io/instance": "sh", "app.kubernetes.io/name": "skillhost"}) {
			t.Errorf("%s selector %q is not the release's", what, s)
		}
	}
	if got := o.pdb.Spec.MaxUnavailable; got == nil || got.IntValue() < 1 {
		t.Errorf("PDB maxUnavailable = %v, want at least 1 (0 would block every node drain)", got)
	}
	ports := o.service.Spec.Ports
	ctr := o.deploy.Spec.Template.Spec.Containers[0]
	if len(ports) != 1 || ports[0].TargetPort != intstr.FromString("http") || !hasPort(ctr, "http") {
		t.Errorf("Service ports %v must target the container's http port %v", ports, ctr.Ports)
	}
	ru := o.deploy.Spec.Strategy.RollingUpdate
	if ru == nil || ru.MaxUnavailable.IntValue() != 0 {
		t.Errorf("rolling update %v: want maxUnavailable 0, a pod goes only once its successor is ready", ru)
	}
}

func hasPort(c corev1.Container, name string) bool {
	return slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == name })
}

// checkProbes: readiness on /readyz, liveness on /healthz, both on the
// port the daemon listens on, without headers (the kubelet holds no token).
func checkProbes(t *testing.T, c corev1.Container) {
	t.Helper()
	for what, want := range map[string]struct {
		p    *corev1.Probe
		path string
	}{
		"readiness": {c.ReadinessProbe, "/readyz"},
		"liveness":  {c.LivenessProbe, "/healthz"},
		"startup":   {c.StartupProbe, "/healthz"},
	} {
		if want.p == nil || want.p.HTTPGet == nil {
			t.Errorf("%s probe: none over HTTP", what)
			continue
		}
		g := want.p.HTTPGet
		if g.Path != want.path || g.Port != intstr.FromString("http") || len(g.HTTPHeaders) != 0 {
			t.Errorf("%s probe %s on %v (headers %v), want %s on http and no headers", what, g.Path, g.Port.String(), g.HTTPHeaders, want.path)
		}
	}
	listen := ""
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--listen="); ok {
			listen = v
		}
	}
	for _, p := range c.Ports {
		if p.Name == "http" && !strings.HasSuffix(listen, ":"+strconv.Itoa(int(p.ContainerPort))) {
			t.Errorf("--listen=%s is not the http port %d the probes use", listen, p.ContainerPort)
		}
	}
}

// checkGrace: a preStop sleep, then SIGTERM and the daemon's --grace, all
// within terminationGracePeriodSeconds.
func checkGrace(t *testing.T, pod corev1.PodSpec, c corev1.Container, flags map[string]string, values map[string]any) {
	t.Helper()
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil {
		t.Fatalf("no preStop sleep: %+v", c.Lifecycle)
	}
	sleep := c.Lifecycle.PreStop.Sleep.Seconds
	grace, err := strconv.ParseInt(strings.TrimSuffix(flags["grace"], "s"), 10, 64)
	if err != nil || !strings.HasSuffix(flags["grace"], "s") {
		t.Fatalf("--grace=%q is not whole seconds", flags["grace"])
	}
	if want, ok := values["graceSeconds"].(float64); ok && float64(grace) != want {
		t.Errorf("--grace=%ds, want the values' %v", grace, want)
	}
	tgps := pod.TerminationGracePeriodSeconds
	if tgps == nil || *tgps <= sleep+grace {
		t.Errorf("terminationGracePeriodSeconds = %v, want above preStop %d + grace %d", tgps, sleep, grace)
	}
	if sleep < 1 {
		t.Errorf("preStop sleeps %ds: the endpoints would still route to a stopping pod", sleep)
	}
}

// checkSecrets: every secret reaches the pod as a file of mode 0400 in a
// read-only mount, and none through the environment.
func checkSecrets(t *testing.T, pod corev1.PodSpec, c corev1.Container, flags map[string]string, want []string) {
	t.Helper()
	if len(c.EnvFrom) != 0 {
		t.Errorf("envFrom %v: secrets must not reach the environment", c.EnvFrom)
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.Value != "" {
			t.Errorf("env %s is not a field of the pod: secrets must not reach the environment", e.Name)
		}
	}
	for _, ic := range pod.InitContainers {
		if len(ic.Env) != 0 || len(ic.EnvFrom) != 0 {
			t.Errorf("init container %s has an environment", ic.Name)
		}
	}
	// the secret files: mount path + item path -> its effective mode
	files := map[string]int32{}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m
	}
	for _, v := range pod.Volumes {
		var items []corev1.KeyToPath
		var defMode *int32
		switch {
		case v.Secret != nil:
			items, defMode = v.Secret.Items, v.Secret.DefaultMode
		case v.Projected != nil:
			defMode = v.Projected.DefaultMode
			for _, s := range v.Projected.Sources {
				if s.Secret == nil {
					t.Errorf("volume %s projects a source that is not a Secret", v.Name)
					continue
				}
				if len(s.Secret.Items) == 0 {
					t.Errorf("volume %s projects all of Secret %s: name the keys", v.Name, s.Secret.Name)
				}
				items = append(items, s.Secret.Items...)
			}
		default:
			continue
		}
		m, ok := mounts[v.Name]
		if !ok || !m.ReadOnly {
			t.Errorf("secret volume %s is not mounted read-only (%+v)", v.Name, m)
		}
		if defMode == nil || *defMode&0o077 != 0 {
			t.Errorf("secret volume %s default mode %v, want 0400 or 0600", v.Name, defMode)
		}
		for _, it := range items {
			mode := defMode
			if it.Mode != nil {
				mode = it.Mode
			}
			files[path.Join(m.MountPath, it.Path)] = *mode
		}
	}
	if pod.SecurityContext != nil && pod.SecurityContext.FSGroup != nil {
		t.Errorf("fsGroup %d would make the secret files group-readable, which the daemon refuses", *pod.SecurityContext.FSGroup)
	}
	named := map[string]bool{}
	for _, f := range want {
		p, ok := flags[f]
		if !ok {
			t.Errorf("--%s not passed", f)
			continue
		}
		mode, ok := files[p]
		switch {
		case !ok:
			t.Errorf("--%s=%s is not a file of a secret volume (%v)", f, p, files)
		case mode&0o077 != 0:
			t.Errorf("--%s=%s has mode %#o; the daemon refuses a secret others may read", f, p, mode)
		}
		named[p] = true
	}
	for p := range files {
		if !named[p] {
			t.Errorf("secret file %s is mounted but no flag names it", p)
		}
	}
}

// checkSecurity: root in the container (to read the root-owned Secret
// files and start skills as --skill-user) but with a bounded capability set
// and no privilege escalation.
func checkSecurity(t *testing.T, pod corev1.PodSpec, c corev1.Container) {
	t.Helper()
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the pod mounts a Kubernetes API token; the daemon needs none")
	}
	for _, ctr := range append(slices.Clone(pod.InitContainers), c) {
		sc := ctr.SecurityContext
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
			sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
			t.Errorf("container %s security context %+v: want no escalation, a read-only root and all capabilities dropped", ctr.Name, sc)
			continue
		}
		for _, capability := range sc.Capabilities.Add {
			if !slices.Contains([]corev1.Capability{"CHOWN", "KILL", "SETGID", "SETUID"}, capability) {
				t.Errorf("container %s adds capability %s", ctr.Name, capability)
			}
		}
	}
}

// serveFlags lists the flags `host serve -h` prints.
var serveFlags = sync.OnceValues(func() (map[string]bool, error) {
	// `host serve -h` prints its flags and exits 0 (flag.ErrHelp).
	out, err := exec.Command(hostBin, "serve", "-h").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("host serve -h: %w\n%s", err, out)
	}
	names := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`).FindAllStringSubmatch(string(out), -1) {
		names[m[1]] = true
	}
	if !names["listen"] || !names["grace"] {
		return nil, fmt.Errorf("host serve -h lists no --listen or --grace; its output:\n%s", out)
	}
	return names, nil
})

// checkFlagsKnown: every flag the pod passes is one this tree's `host
// serve` accepts, asked of the program itself.
func checkFlagsKnown(t *testing.T, flags map[string]string) {
	t.Helper()
	known, err := serveFlags()
	if err != nil {
		t.Fatal(err)
	}
	for f := range flags {
		if !known[f] {
			t.Errorf("--%s: host serve has no such flag", f)
		}
	}
}
