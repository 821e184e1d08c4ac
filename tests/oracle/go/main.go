// kubegap-oracle: the differential oracle of issue 29. It answers the cases of
// tests/oracle (JSON lines on stdin, one {"result": ...} or {"error": "..."} line per case
// on stdout, in order; the protocol is in tests/oracle/differential.py) with Kubernetes'
// OWN functions, at the release pinned in go.mod (the one the e2e tests run), never with a
// re-implementation:
//
//	tolerates    k8s.io/api/core/v1                    (*Toleration).ToleratesTaint
//	untolerated  k8s.io/component-helpers/scheduling/corev1 FindMatchingUntoleratedTaint,
//	             with the scheduler's filter (effect NoSchedule or NoExecute: see
//	             doNotScheduleTaints)
//	eviction     k8s.io/kubernetes/pkg/controller/tainteviction getNoExecuteTaints and
//	             getMinTolerationTime (unexported: linked by name below), with
//	             k8s.io/kubernetes/pkg/apis/core/v1/helper GetMatchingTolerations between them
//	nodeaffinity k8s.io/component-helpers/scheduling/corev1/nodeaffinity
//	             GetRequiredNodeAffinity(pod).Match(node)
//	selector     k8s.io/apimachinery/pkg/apis/meta/v1 LabelSelectorAsSelector, then
//	             Selector.Matches(labels.Set) (as the eviction API finds a pod's PDBs)
//	quantity     k8s.io/apimachinery/pkg/api/resource ParseQuantity, Quantity.IsZero
//
// Its own code is only the glue the scheduler and controllers put around those calls, each
// piece citing the upstream lines it follows, plus two documented stand-ins: the
// scheduler's two-line taint filter, copied (doNotScheduleTaints), and a time guard that
// hands ParseQuantity an equivalent exponent where it would compute for minutes
// (boundedExponent). Feature gates are Kubernetes' defaults at
// that release (TaintTolerationComparisonOperators, which lets tolerations use Gt/Lt, is
// alpha and off in 1.36); -feature-gates changes them as the components' flag does.
//
// Cases are decoded as the API server decodes JSON (sigs.k8s.io/json, case-sensitive field
// names; unknown fields are ignored). A line that is not a case of a known relation gets
// {"error": "..."}; the program never stops on one.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
	_ "unsafe" // for go:linkname

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	v1helper "k8s.io/kubernetes/pkg/apis/core/v1/helper"
	_ "k8s.io/kubernetes/pkg/controller/tainteviction" // the functions linked by name below
	"k8s.io/kubernetes/pkg/features"
	kjson "sigs.k8s.io/json"
)

// The taint-eviction controller's own helpers (pkg/controller/tainteviction/taint_eviction.go
// at v1.36.3: getNoExecuteTaints line 150, getMinTolerationTime line 161). They are
// unexported, so they are pulled by symbol name; the package is imported above so that its
// code is linked in. A renamed or removed function fails the link; selfCheck (run before
// any case is answered) catches one whose meaning or signature changed.

//go:linkname getNoExecuteTaints k8s.io/kubernetes/pkg/controller/tainteviction.getNoExecuteTaints
func getNoExecuteTaints(taints []v1.Taint) []v1.Taint

//go:linkname getMinTolerationTime k8s.io/kubernetes/pkg/controller/tainteviction.getMinTolerationTime
func getMinTolerationTime(tolerations []v1.Toleration) time.Duration

// discard: the helpers take a logger only to log values they cannot parse (Gt/Lt).
var discard = logr.Discard()

// comparisonOperators is the TaintTolerationComparisonOperators gate, read once after flags.
var comparisonOperators bool

// doNotScheduleTaints is the filter the scheduler's TaintToleration plugin passes to
// FindMatchingUntoleratedTaint: DoNotScheduleTaintsFilterFunc in
// k8s.io/kubernetes/pkg/scheduler/framework/plugins/helper/taint.go (lines 23-28 at
// v1.36.3), copied because importing that package would add some 200 packages (the
// scheduler framework) to the build for one comparison.
func doNotScheduleTaints(t *v1.Taint) bool {
	return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
}

// kubeCase is the union of every relation's inputs (Kubernetes JSON field names).
type kubeCase struct {
	Relation string `json:"relation"`

	Toleration  *v1.Toleration  `json:"toleration"`
	Taint       *v1.Taint       `json:"taint"`
	Tolerations []v1.Toleration `json:"tolerations"`
	Taints      []v1.Taint      `json:"taints"`

	NodeSelector map[string]string `json:"nodeSelector"`
	Affinity     *v1.Affinity      `json:"affinity"`
	Node         *struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	} `json:"node"`

	// Selector stays raw: null (selects nothing) and absent (a malformed case) differ.
	Selector json.RawMessage   `json:"selector"`
	Labels   map[string]string `json:"labels"`

	Text *string `json:"text"`
}

type caseError string

func (e caseError) Error() string { return string(e) }

// answer returns the result's JSON text for one case line.
func answer(line []byte) (result string, err error) {
	defer func() {
		if r := recover(); r != nil {
			result, err = "", fmt.Errorf("panic: %v", r)
		}
	}()
	var c kubeCase
	if err := kjson.UnmarshalCaseSensitivePreserveInts(line, &c); err != nil {
		return "", err
	}
	switch c.Relation {
	case "tolerates":
		if c.Toleration == nil || c.Taint == nil {
			return "", caseError("tolerates needs toleration and taint objects")
		}
		return strconv.FormatBool(c.Toleration.ToleratesTaint(discard, c.Taint, comparisonOperators)), nil

	case "untolerated":
		taint, found := corev1helpers.FindMatchingUntoleratedTaint(discard, c.Taints, c.Tolerations,
			doNotScheduleTaints, comparisonOperators)
		if !found {
			return "-1", nil
		}
		// The helper returns a copy of the taint; its index is that of the first equal one.
		for i := range c.Taints {
			if c.Taints[i].Key == taint.Key && c.Taints[i].Value == taint.Value &&
				c.Taints[i].Effect == taint.Effect && c.Taints[i].TimeAdded.Equal(taint.TimeAdded) {
				return strconv.Itoa(i), nil
			}
		}
		return "", caseError("internal: the untolerated taint is not among the input taints")

	case "eviction":
		return strconv.FormatInt(evictionSeconds(c.Tolerations, c.Taints), 10), nil

	case "nodeaffinity":
		if c.Node == nil {
			return "", caseError("nodeaffinity needs a node object")
		}
		pod := &v1.Pod{Spec: v1.PodSpec{NodeSelector: c.NodeSelector, Affinity: c.Affinity}}
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: c.Node.Name, Labels: c.Node.Labels}}
		// The scheduler's NodeAffinity Filter ignores the error ("for backwards
		// compatibility"; pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go
		// line 233 at v1.36.3): an unparsable term simply matches no node.
		match, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node)
		return strconv.FormatBool(match), nil

	case "selector":
		if c.Selector == nil {
			return "", caseError(`selector needs a "selector" member (null or an object)`)
		}
		var sel *metav1.LabelSelector
		if err := kjson.UnmarshalCaseSensitivePreserveInts(c.Selector, &sel); err != nil {
			return "", err
		}
		// A nil selector becomes labels.Nothing() (policy/v1: selects no pods).
		// pkg/registry/core/pod/storage/eviction.go (getPodDisruptionBudgets): an invalid
		// selector "does not match the pod".
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			return "false", nil
		}
		return strconv.FormatBool(s.Matches(labels.Set(c.Labels))), nil

	case "quantity":
		if c.Text == nil {
			return "", caseError(`quantity needs a "text" string`)
		}
		q, err := resource.ParseQuantity(boundedExponent(*c.Text))
		if err != nil {
			return `{"valid":false,"zero":false}`, nil
		}
		return `{"valid":true,"zero":` + strconv.FormatBool(q.IsZero()) + `}`, nil

	case "":
		return "", caseError(`no "relation"`)
	default:
		return "", caseError(fmt.Sprintf("unknown relation %q", c.Relation))
	}
}

// slowExponent: below this decimal exponent ParseQuantity gets slow (see boundedExponent).
const slowExponent = -1000

// boundedExponent returns text with a decimal exponent below slowExponent replaced by
// slowExponent, and every other text unchanged. It is the oracle's one departure from
// calling upstream on the case as given, for time only, on an input with the same answer:
//
// ParseQuantity (k8s.io/apimachinery/pkg/api/resource/quantity.go at v0.36.3) rounds every
// non-zero value up to a whole nano (line 374, amount.Round(amount, Nano.infScale(),
// inf.RoundUp)), which for a value scaled by 10^e with e very negative builds a
// 10^-e big.Int: 2.6 s of CPU at "1e-10000000", 7.8 s at "1e-30000000", and minutes per
// case (with hundreds of MB) at "1e-2147483647" or "1e2147483648" (the exponent is read
// with strconv.ParseInt and truncated to int32, suffix.go lines 189-194, so the latter
// is 1e-2147483648). Whether the text is valid, and whether it is zero, do not depend on
// the exponent's value: validity depends only on the exponent parsing as an int64
// (kept: the replacement is made only when it does), zero-ness only on the digits before
// the suffix (kept: a non-zero value rounds up to at least 1n whatever the exponent, a
// zero one stays zero). So the same function answers the same (valid, zero) at e-1000.
//
// The suffix is found as parseQuantityString finds an exponent: the text after the last
// 'e' or 'E', which must parse as an int64. If parseQuantityString's suffix starts
// elsewhere, it does not begin with that 'e' followed by an integer, and the text is
// invalid before and after the replacement alike (suffix.go lines 189-197).
func boundedExponent(text string) string {
	i := strings.LastIndexAny(text, "eE")
	if i < 0 {
		return text
	}
	e, err := strconv.ParseInt(text[i+1:], 10, 64)
	if err != nil || int32(e) >= slowExponent {
		return text
	}
	return text[:i+1] + strconv.Itoa(slowExponent)
}

// evictionSeconds: -1 the taint-eviction controller never evicts the pod, 0 at once, N > 0
// after N seconds. The glue is that of Controller.processPodOnNode and its callers in
// pkg/controller/tainteviction/taint_eviction.go (v1.36.3); the decisions are the upstream
// functions'.
func evictionSeconds(tolerations []v1.Toleration, taints []v1.Taint) int64 {
	taints = getNoExecuteTaints(taints)
	// handleNodeUpdate (lines 551-560, 575-581) keeps no entry for a node without NoExecute
	// taints and cancels its pods' evictions; handlePodUpdate (lines 519-529) then returns
	// before processPodOnNode: nothing is scheduled.
	if len(taints) == 0 {
		return -1
	}
	// processPodOnNode, lines 463-470: a NoExecute taint no toleration tolerates -> deleted now.
	allTolerated, used := v1helper.GetMatchingTolerations(discard, taints, tolerations)
	if !allTolerated {
		return 0
	}
	// Lines 471-477: a negative duration means "tolerate forever" (no work is scheduled).
	d := getMinTolerationTime(used)
	if d < 0 {
		return -1
	}
	// Lines 479-489: the deletion fires at now + d. d is a whole number of seconds unless
	// tolerationSeconds * time.Second overflowed int64 (upstream line 181) to a positive
	// remainder; round up (without overflowing near the largest Duration) so that a
	// positive wait never reads as "at once".
	seconds := int64(d / time.Second)
	if d%time.Second != 0 {
		seconds++
	}
	return seconds
}

// selfCheck runs cases whose answers Kubernetes documents, so that a linked symbol whose
// meaning changed (or did not link what was meant) is caught before any answer is given.
func selfCheck() error {
	checks := []struct{ in, want string }{
		{`{"relation":"eviction","tolerations":[],"taints":[{"key":"k","effect":"NoExecute"}]}`, "0"},
		{`{"relation":"eviction","tolerations":[{"operator":"Exists"}],"taints":[{"key":"k","effect":"NoExecute"}]}`, "-1"},
		{`{"relation":"eviction","tolerations":[{"operator":"Exists","tolerationSeconds":30}],"taints":[{"key":"k","effect":"NoExecute"},{"key":"s","effect":"NoSchedule"}]}`, "30"},
		{`{"relation":"eviction","tolerations":[],"taints":[{"key":"k","effect":"NoSchedule"}]}`, "-1"},
		{`{"relation":"tolerates","toleration":{"operator":"Exists","effect":"NoExecute"},"taint":{"key":"k","effect":"NoSchedule"}}`, "false"},
		{`{"relation":"quantity","text":"1e2147483648"}`, `{"valid":true,"zero":false}`},
		{`{"relation":"quantity","text":"-0.0e-99999999"}`, `{"valid":true,"zero":true}`},
	}
	for _, c := range checks {
		got, err := answer([]byte(c.in))
		if err != nil || got != c.want {
			return fmt.Errorf("self-check failed: %s -> %q, %v (want %s)", c.in, got, err, c.want)
		}
	}
	return nil
}

func moduleVersions() string {
	var b strings.Builder
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "no build information\n"
	}
	fmt.Fprintf(&b, "kubegap-oracle (%s, %s)\n", info.GoVersion, runtime.GOARCH)
	for _, d := range info.Deps {
		if !strings.HasPrefix(d.Path, "k8s.io/") || d.Path == "k8s.io/klog/v2" || d.Path == "k8s.io/utils" || d.Path == "k8s.io/kube-openapi" {
			continue
		}
		v := d.Version
		if d.Replace != nil {
			v = d.Replace.Version
		}
		fmt.Fprintf(&b, "%s %s\n", d.Path, v)
	}
	fmt.Fprintf(&b, "feature gate %s=%t\n", features.TaintTolerationComparisonOperators, comparisonOperators)
	return b.String()
}

func main() {
	version := flag.Bool("version", false, "print the Kubernetes module versions this oracle was built with, and exit")
	gates := flag.String("feature-gates", "", "Kubernetes feature gates, as key=value pairs separated by commas (default: the release's defaults)")
	flag.Parse()
	if flag.NArg() != 0 {
		fmt.Fprintf(os.Stderr, "kubegap-oracle: unexpected argument %q (cases come on stdin)\n", flag.Arg(0))
		os.Exit(2)
	}
	if *gates != "" {
		if err := utilfeature.DefaultMutableFeatureGate.Set(*gates); err != nil {
			fmt.Fprintf(os.Stderr, "kubegap-oracle: -feature-gates: %v\n", err)
			os.Exit(2)
		}
	}
	comparisonOperators = utilfeature.DefaultFeatureGate.Enabled(features.TaintTolerationComparisonOperators)
	if *version {
		fmt.Print(moduleVersions())
		return
	}
	if err := selfCheck(); err != nil {
		fmt.Fprintf(os.Stderr, "kubegap-oracle: %v\n", err)
		os.Exit(1)
	}

	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriterSize(os.Stdout, 1<<20)
	var buf []byte
	for {
		line, err := in.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) { // a line longer than the buffer: gather it
			buf = append(buf[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = in.ReadSlice('\n')
				buf = append(buf, line...)
			}
			line = buf
		}
		if len(line) == 0 && err != nil {
			if err != io.EOF {
				fmt.Fprintf(os.Stderr, "kubegap-oracle: reading stdin: %v\n", err)
				out.Flush()
				os.Exit(1)
			}
			break
		}
		line = bytes.TrimRight(line, "\r\n")
		result, aerr := answer(line)
		if aerr != nil {
			msg, _ := json.Marshal(aerr.Error())
			out.WriteString(`{"error":`)
			out.Write(msg)
			out.WriteString("}\n")
		} else {
			out.WriteString(`{"result":`)
			out.WriteString(result)
			out.WriteString("}\n")
		}
		if err != nil { // the last line had no newline
			if err != io.EOF {
				fmt.Fprintf(os.Stderr, "kubegap-oracle: reading stdin: %v\n", err)
				out.Flush()
				os.Exit(1)
			}
			break
		}
	}
	if err := out.Flush(); err != nil {
		fmt.Fprintf(os.Stderr, "kubegap-oracle: writing stdout: %v\n", err)
		os.Exit(1)
	}
}
