package memcluster

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/ctrlkit/ctrlkit/defaults"
)

// The batch/v1 kinds. No Job or CronJob controller runs: Jobs stay as
// created until something else updates them.

// The unprefixed labels kube-apiserver still sets on a Job's template
// beside batch.kubernetes.io/job-name and controller-uid.
const (
	legacyJobNameLabel       = "job-name"
	legacyControllerUIDLabel = "controller-uid"
)

func jobKind() Kind[*batchv1.Job] {
	k := builtinKindOf(batchv1.SchemeGroupVersion.WithKind("Job"), "jobs",
		func() *batchv1.Job { return &batchv1.Job{} }, func() runtime.Object { return &batchv1.JobList{} })
	k.Categories = []string{"all"}
	k.Default = defaults.Job
	k.PrepareCreate = generateJobSelector
	k.Validate = validateJob
	specGeneration(&k, func(j *batchv1.Job) *batchv1.JobSpec { return &j.Spec })
	withStatus(&k, func(j *batchv1.Job) *batchv1.JobStatus { return &j.Status }, false, nil)
	return k
}

// generateJobSelector labels the template of a Job without a manual
// selector with the Job's uid and name (batch.kubernetes.io/controller-uid
// and job-name, and their legacy unprefixed forms) unless they are set,
// and selects its pods by controller-uid, as kube-apiserver does on
// create. The Job's own labels are copied from the template's afterwards
// by the defaults when it has none, as kube-apiserver's are.
func generateJobSelector(j *batchv1.Job) {
	if j.Spec.ManualSelector != nil && *j.Spec.ManualSelector {
		return
	}
	l := maps.Clone(j.Spec.Template.Labels)
	if l == nil {
		l = map[string]string{}
	}
	for _, key := range []string{legacyJobNameLabel, batchv1.JobNameLabel} {
		if _, ok := l[key]; !ok {
			l[key] = j.Name
		}
	}
	for _, key := range []string{legacyControllerUIDLabel, batchv1.ControllerUidLabel} {
		if _, ok := l[key]; !ok {
			l[key] = string(j.UID)
		}
	}
	j.Spec.Template.Labels = l
	sel := j.Spec.Selector.DeepCopy()
	if sel == nil {
		sel = &metav1.LabelSelector{}
	}
	if sel.MatchLabels == nil {
		sel.MatchLabels = map[string]string{}
	}
	if _, ok := sel.MatchLabels[batchv1.ControllerUidLabel]; !ok {
		sel.MatchLabels[batchv1.ControllerUidLabel] = string(j.UID)
	}
	j.Spec.Selector = sel
}

func validateJob(j, old *batchv1.Job) field.ErrorList {
	spec := field.NewPath("spec")
	s := &j.Spec
	var errs field.ErrorList
	if old == nil {
		errs = append(errs, validateGeneratedJobSelector(j)...)
	}
	errs = append(errs, validateJobSpec(s, spec, true)...)
	if s.CompletionMode != nil && *s.CompletionMode == batchv1.IndexedCompletion && s.Completions != nil && *s.Completions > 0 {
		host := fmt.Sprintf("%s-%d", j.Name, *s.Completions-1)
		if len(validation.IsDNS1123Label(host)) > 0 {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), j.Name, "will not able to create pod with invalid DNS label: "+host))
		}
	}
	if old == nil {
		return errs
	}
	o := &old.Spec
	indexed := s.CompletionMode != nil && *s.CompletionMode == batchv1.IndexedCompletion
	switch {
	case !indexed:
		errs = append(errs, immutable(s.Completions, o.Completions, spec.Child("completions"))...)
	case !apiequality.Semantic.DeepEqual(s.Completions, o.Completions) && s.Completions != nil && s.Parallelism != nil && *s.Completions != *s.Parallelism:
		errs = append(errs, field.Invalid(spec.Child("completions"), s.Completions, "can only be modified in tandem with spec.parallelism"))
	}
	errs = append(errs, immutable(s.Selector, o.Selector, spec.Child("selector"))...)
	errs = append(errs, immutable(jobTemplateForUpdate(s.Template, old), jobTemplateForUpdate(o.Template, old), spec.Child("template"))...)
	errs = append(errs, immutable(s.CompletionMode, o.CompletionMode, spec.Child("completionMode"))...)
	errs = append(errs, immutable(s.PodFailurePolicy, o.PodFailurePolicy, spec.Child("podFailurePolicy"))...)
	errs = append(errs, immutable(s.BackoffLimitPerIndex, o.BackoffLimitPerIndex, spec.Child("backoffLimitPerIndex"))...)
	errs = append(errs, immutable(s.ManagedBy, o.ManagedBy, spec.Child("managedBy"))...)
	errs = append(errs, immutable(s.SuccessPolicy, o.SuccessPolicy, spec.Child("successPolicy"))...)
	return errs
}

// jobTemplateForUpdate is the part of a Job's template an update may not
// change: all of it, unless the Job is suspended and has no active pods
// (and has not started, or is suspended by condition), when its
// scheduling directives and the containers' resources may change.
func jobTemplateForUpdate(t corev1.PodTemplateSpec, old *batchv1.Job) corev1.PodTemplateSpec {
	st := &old.Status
	suspended := old.Spec.Suspend != nil && *old.Spec.Suspend
	suspendedByCondition := false
	for _, c := range st.Conditions {
		suspendedByCondition = suspendedByCondition || c.Type == batchv1.JobSuspended && c.Status == corev1.ConditionTrue
	}
	if !suspended || (st.StartTime != nil && !suspendedByCondition) || st.Active != 0 {
		return t
	}
	m := *t.DeepCopy()
	m.Labels, m.Annotations = nil, nil
	m.Spec.NodeSelector, m.Spec.Tolerations, m.Spec.SchedulingGates = nil, nil, nil
	if m.Spec.Affinity != nil {
		m.Spec.Affinity.NodeAffinity = nil
		if *m.Spec.Affinity == (corev1.Affinity{}) {
			m.Spec.Affinity = nil
		}
	}
	for _, cs := range [][]corev1.Container{m.Spec.Containers, m.Spec.InitContainers} {
		for i := range cs {
			cs[i].Resources = corev1.ResourceRequirements{}
		}
	}
	return m
}

// validateGeneratedJobSelector checks, for a Job without a manual
// selector, the labels and selector generateJobSelector made.
func validateGeneratedJobSelector(j *batchv1.Job) field.ErrorList {
	if j.Spec.ManualSelector != nil && *j.Spec.ManualSelector || j.Spec.Selector == nil {
		return nil
	}
	meta := field.NewPath("spec", "template", "metadata")
	var errs field.ErrorList
	want := map[string]string{
		legacyControllerUIDLabel: string(j.UID), legacyJobNameLabel: j.Name,
		batchv1.ControllerUidLabel: string(j.UID), batchv1.JobNameLabel: j.Name,
	}
	for _, key := range []string{legacyControllerUIDLabel, legacyJobNameLabel, batchv1.ControllerUidLabel, batchv1.JobNameLabel} {
		switch v, ok := j.Spec.Template.Labels[key]; {
		case !ok:
			errs = append(errs, field.Required(meta.Child("labels").Key(key), want[key]))
		case v != want[key]:
			errs = append(errs, field.Invalid(meta.Child("labels").Key(key), j.Spec.Template.Labels, want[key]))
		}
	}
	if sel, err := metav1.LabelSelectorAsSelector(j.Spec.Selector); err == nil && !sel.Matches(labels.Set(want)) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "selector"), j.Spec.Selector, "`selector` not auto-generated"))
	}
	return errs
}

// validateJobSpec validates the spec of a Job (withSelector) or of a
// CronJob's job template.
func validateJobSpec(s *batchv1.JobSpec, spec *field.Path, withSelector bool) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct {
		v    *int32
		name string
	}{{s.Parallelism, "parallelism"}, {s.Completions, "completions"}, {s.BackoffLimit, "backoffLimit"},
		{s.TTLSecondsAfterFinished, "ttlSecondsAfterFinished"}, {s.BackoffLimitPerIndex, "backoffLimitPerIndex"}, {s.MaxFailedIndexes, "maxFailedIndexes"}} {
		if f.v != nil {
			errs = append(errs, nonNegative(int64(*f.v), spec.Child(f.name))...)
		}
	}
	if s.ActiveDeadlineSeconds != nil {
		errs = append(errs, nonNegative(*s.ActiveDeadlineSeconds, spec.Child("activeDeadlineSeconds"))...)
	}
	if s.MaxFailedIndexes != nil && s.BackoffLimitPerIndex == nil {
		errs = append(errs, field.Required(spec.Child("backoffLimitPerIndex"), "when maxFailedIndexes is specified"))
	}
	indexed := false
	if m := s.CompletionMode; m != nil {
		switch *m {
		case batchv1.NonIndexedCompletion:
		case batchv1.IndexedCompletion:
			indexed = true
			if s.Completions == nil {
				errs = append(errs, field.Required(spec.Child("completions"), "when completion mode is Indexed"))
			}
			if s.Parallelism != nil && *s.Parallelism > 100000 {
				errs = append(errs, field.Invalid(spec.Child("parallelism"), *s.Parallelism, "must be less than or equal to 100000 when completion mode is Indexed"))
			}
		default:
			errs = append(errs, field.NotSupported(spec.Child("completionMode"), m, []string{string(batchv1.NonIndexedCompletion), string(batchv1.IndexedCompletion)}))
		}
	}
	if !indexed {
		if s.BackoffLimitPerIndex != nil {
			errs = append(errs, field.Invalid(spec.Child("backoffLimitPerIndex"), *s.BackoffLimitPerIndex, "requires indexed completion mode"))
		}
		if s.MaxFailedIndexes != nil {
			errs = append(errs, field.Invalid(spec.Child("maxFailedIndexes"), *s.MaxFailedIndexes, "requires indexed completion mode"))
		}
		if s.SuccessPolicy != nil {
			errs = append(errs, field.Invalid(spec.Child("successPolicy"), *s.SuccessPolicy, "requires indexed completion mode"))
		}
	}
	if p := s.PodReplacementPolicy; p != nil {
		switch {
		case s.PodFailurePolicy != nil && *p != batchv1.Failed:
			errs = append(errs, field.NotSupported(spec.Child("podReplacementPolicy"), *p, []string{string(batchv1.Failed)}))
		case s.PodFailurePolicy == nil && *p != batchv1.Failed && *p != batchv1.TerminatingOrFailed:
			errs = append(errs, field.NotSupported(spec.Child("podReplacementPolicy"), *p, []string{string(batchv1.Failed), string(batchv1.TerminatingOrFailed)}))
		}
	}
	tp := spec.Child("template")
	errs = append(errs, validatePodTemplate(&s.Template, tp)...)
	rp := tp.Child("spec", "restartPolicy")
	switch r := s.Template.Spec.RestartPolicy; {
	case r == corev1.RestartPolicyAlways || r == "":
		errs = append(errs, field.Required(rp, fmt.Sprintf("valid values: %q, %q", corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever)))
	case r != corev1.RestartPolicyOnFailure && r != corev1.RestartPolicyNever:
		errs = append(errs, field.NotSupported(rp, r, []string{string(corev1.RestartPolicyOnFailure), string(corev1.RestartPolicyNever)}))
	case s.PodFailurePolicy != nil && r != corev1.RestartPolicyNever:
		errs = append(errs, field.Invalid(rp, r, fmt.Sprintf("only %q is supported when podFailurePolicy is specified", corev1.RestartPolicyNever)))
	}
	if !withSelector {
		return errs
	}
	if s.Selector == nil {
		errs = append(errs, field.Required(spec.Child("selector"), ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(s.Selector, metav1validation.LabelSelectorValidationOptions{}, spec.Child("selector"))...)
	}
	if sel, err := metav1.LabelSelectorAsSelector(s.Selector); err == nil && !sel.Matches(labels.Set(s.Template.Labels)) {
		errs = append(errs, field.Invalid(tp.Child("metadata", "labels"), s.Template.Labels, "`selector` does not match template `labels`"))
	}
	return errs
}

func cronJobKind() Kind[*batchv1.CronJob] {
	k := builtinKindOf(batchv1.SchemeGroupVersion.WithKind("CronJob"), "cronjobs",
		func() *batchv1.CronJob { return &batchv1.CronJob{} }, func() runtime.Object { return &batchv1.CronJobList{} })
	k.ShortNames, k.Categories = []string{"cj"}, []string{"all"}
	k.Default = defaults.CronJob
	k.Validate = validateCronJob
	specGeneration(&k, func(cj *batchv1.CronJob) *batchv1.CronJobSpec { return &cj.Spec })
	withStatus(&k, func(cj *batchv1.CronJob) *batchv1.CronJobStatus { return &cj.Status }, false, nil)
	return k
}

func validateCronJob(cj, old *batchv1.CronJob) field.ErrorList {
	spec := field.NewPath("spec")
	s := &cj.Spec
	var errs field.ErrorList
	if old == nil && len(cj.Name) > 52 {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), cj.Name, "must be no more than 52 characters"))
	}
	sp := spec.Child("schedule")
	if s.Schedule == "" {
		errs = append(errs, field.Required(sp, ""))
	} else {
		if err := cronSchedule(s.Schedule); err != nil {
			errs = append(errs, field.Invalid(sp, s.Schedule, err.Error()))
		}
		allowTZ := old != nil && strings.Contains(old.Spec.Schedule, "TZ")
		switch {
		case allowTZ && strings.Contains(s.Schedule, "TZ") && s.TimeZone != nil:
			errs = append(errs, field.Invalid(sp, s.Schedule, "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
		case !allowTZ && strings.Contains(s.Schedule, "TZ"):
			errs = append(errs, field.Invalid(sp, s.Schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
		}
	}
	if s.StartingDeadlineSeconds != nil {
		errs = append(errs, nonNegative(*s.StartingDeadlineSeconds, spec.Child("startingDeadlineSeconds"))...)
	}
	if tz := s.TimeZone; tz != nil && (old == nil || old.Spec.TimeZone == nil || *old.Spec.TimeZone != *tz) {
		errs = append(errs, validateTimeZone(*tz, spec.Child("timeZone"))...)
	}
	switch s.ConcurrencyPolicy {
	case batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent:
	default:
		errs = append(errs, field.NotSupported(spec.Child("concurrencyPolicy"), s.ConcurrencyPolicy,
			[]string{string(batchv1.AllowConcurrent), string(batchv1.ForbidConcurrent), string(batchv1.ReplaceConcurrent)}))
	}
	jt := spec.Child("jobTemplate", "spec")
	errs = append(errs, validateJobSpec(&s.JobTemplate.Spec, jt, false)...)
	if s.JobTemplate.Spec.Selector != nil {
		errs = append(errs, field.Invalid(jt.Child("selector"), s.JobTemplate.Spec.Selector, "`selector` will be auto-generated"))
	}
	if m := s.JobTemplate.Spec.ManualSelector; m != nil && *m {
		errs = append(errs, field.NotSupported(jt.Child("manualSelector"), m, []string{"nil", "false"}))
	}
	for _, f := range []struct {
		v    *int32
		name string
	}{{s.SuccessfulJobsHistoryLimit, "successfulJobsHistoryLimit"}, {s.FailedJobsHistoryLimit, "failedJobsHistoryLimit"}} {
		if f.v != nil {
			errs = append(errs, nonNegative(int64(*f.v), spec.Child(f.name))...)
		}
	}
	return errs
}

func validateTimeZone(tz string, path *field.Path) field.ErrorList {
	if tz == "" {
		return field.ErrorList{field.Invalid(path, &tz, "timeZone must be nil or non-empty string")}
	}
	for _, part := range strings.Split(tz, "/") {
		if part == "." || part == ".." || strings.HasPrefix(part, "-") || strings.ContainsFunc(part, func(r rune) bool {
			return !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '+')
		}) {
			return field.ErrorList{field.Invalid(path, &tz, "unknown time zone "+tz)}
		}
	}
	if strings.EqualFold(tz, "Local") {
		return field.ErrorList{field.Invalid(path, &tz, "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones")}
	}
	if _, err := time.LoadLocation(tz); err != nil {
		return field.ErrorList{field.Invalid(path, &tz, err.Error())}
	}
	return nil
}

// cronSchedule checks a CronJob schedule as the CronJob API does: five
// fields (minute, hour, day of month, month, day of week; names for
// months and days; "*", "?", ranges, lists and steps), or a descriptor
// (@hourly, @daily, @every 1h30m, …), after an optional TZ= or CRON_TZ=
// prefix.
func cronSchedule(spec string) error {
	if spec == "" {
		return fmt.Errorf("empty spec string")
	}
	if strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ=") {
		i, eq := strings.Index(spec, " "), strings.Index(spec, "=")
		if i < 0 {
			return fmt.Errorf("failed to parse cron schedule: missing fields after time zone")
		}
		if _, err := time.LoadLocation(spec[eq+1 : i]); err != nil {
			return fmt.Errorf("provided bad location %s: %v", spec[eq+1:i], err)
		}
		spec = strings.TrimSpace(spec[i:])
	}
	if strings.HasPrefix(spec, "@") {
		switch spec {
		case "@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly":
			return nil
		}
		if d, ok := strings.CutPrefix(spec, "@every "); ok {
			if _, err := time.ParseDuration(d); err != nil {
				return fmt.Errorf("failed to parse duration %s: %s", spec, err)
			}
			return nil
		}
		return fmt.Errorf("unrecognized descriptor: %s", spec)
	}
	fields := strings.Fields(spec)
	if len(fields) != 5 {
		return fmt.Errorf("expected exactly 5 fields, found %d: %s", len(fields), fields)
	}
	months := map[string]int{"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12}
	days := map[string]int{"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}
	bounds := []struct {
		min, max int
		names    map[string]int
	}{{0, 59, nil}, {0, 23, nil}, {1, 31, nil}, {1, 12, months}, {0, 6, days}}
	for i, f := range fields {
		for _, expr := range strings.Split(f, ",") {
			if err := cronRange(expr, bounds[i].min, bounds[i].max, bounds[i].names); err != nil {
				return err
			}
		}
	}
	return nil
}

// cronRange checks one element of a cron field: *, ?, N, N-M, each with
// an optional /step.
func cronRange(expr string, lo, hi int, names map[string]int) error {
	rangeStep := strings.Split(expr, "/")
	if len(rangeStep) > 2 {
		return fmt.Errorf("too many slashes: %s", expr)
	}
	lowHigh := strings.Split(rangeStep[0], "-")
	start, end := lo, hi
	if lowHigh[0] != "*" && lowHigh[0] != "?" {
		var err error
		if start, err = cronValue(lowHigh[0], names); err != nil {
			return err
		}
		switch len(lowHigh) {
		case 1:
			end = start
		case 2:
			if end, err = cronValue(lowHigh[1], names); err != nil {
				return err
			}
		default:
			return fmt.Errorf("too many hyphens: %s", expr)
		}
	}
	if len(rangeStep) == 2 {
		step, err := cronValue(rangeStep[1], nil)
		if err != nil {
			return err
		}
		if len(lowHigh) == 1 {
			end = hi // "N/step" runs to the end of the range
		}
		if step == 0 {
			return fmt.Errorf("step of range should be a positive number: %s", expr)
		}
	}
	switch {
	case start < lo:
		return fmt.Errorf("beginning of range (%d) below minimum (%d): %s", start, lo, expr)
	case end > hi:
		return fmt.Errorf("end of range (%d) above maximum (%d): %s", end, hi, expr)
	case start > end:
		return fmt.Errorf("beginning of range (%d) beyond end of range (%d): %s", start, end, expr)
	}
	return nil
}

func cronValue(s string, names map[string]int) (int, error) {
	if n, ok := names[strings.ToLower(s)]; ok {
		return n, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("failed to parse int from %s: %s", s, err)
	}
	if n < 0 {
		return 0, fmt.Errorf("negative number (%d) not allowed: %s", n, s)
	}
	return n, nil
}
