package plugin

import (
	"fmt"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
)

// autoscalers reports the HorizontalPodAutoscalers of the Deployment that
// are pinned at their maximum while wanting more (ScalingLimited with
// reason TooManyReplicas, as the HPA controller writes it), or that cannot
// scale at all (AbleToScale or ScalingActive False). Neither stops a
// rollout: they are warnings about capacity.
func autoscalers(st *State) []Cause {
	var out []Cause
	for _, h := range st.Autoscalers {
		obj := []string{"horizontalpodautoscaler/" + h.Name}
		cond := func(t autoscalingv2.HorizontalPodAutoscalerConditionType) *autoscalingv2.HorizontalPodAutoscalerCondition {
			for i := range h.Status.Conditions {
				if h.Status.Conditions[i].Type == t {
					return &h.Status.Conditions[i]
				}
			}
			return nil
		}
		if c := cond(autoscalingv2.ScalingLimited); c != nil && c.Status == corev1.ConditionTrue && c.Reason == "TooManyReplicas" {
			msg := fmt.Sprintf("HorizontalPodAutoscaler %s is at its maximum of %d replicas and wants more", h.Name, h.Spec.MaxReplicas)
			if m := metricsText(h); m != "" {
				msg += ": " + m
			}
			out = append(out, Cause{Code: AutoscalerLimited, Severity: Warning, Message: msg, Objects: obj, Detail: join(c.Reason, c.Message),
				Fix: fmt.Sprintf("if the load is real, raise maxReplicas (kubectl patch hpa/%s -p '{\"spec\":{\"maxReplicas\":%d}}') where the cluster has room; "+
					"if not, find why the pods use more than the target (a new version? kubectl ctrlkit history)", h.Name, h.Spec.MaxReplicas*2)})
		}
		for _, t := range []autoscalingv2.HorizontalPodAutoscalerConditionType{autoscalingv2.AbleToScale, autoscalingv2.ScalingActive} {
			if c := cond(t); c != nil && c.Status == corev1.ConditionFalse {
				out = append(out, Cause{Code: AutoscalerFailing, Severity: Warning,
					Message: fmt.Sprintf("HorizontalPodAutoscaler %s cannot scale (%s=False): the replicas stay where they are", h.Name, t),
					Objects: obj, Detail: join(c.Reason, c.Message),
					Fix: "fix what the message names (the metrics API and metrics-server for resource metrics, the pods' resource requests, the scale target)"})
				break
			}
		}
	}
	return out
}

// metricsText renders the autoscaler's current metrics against their
// targets, e.g. "cpu 180% of requests (target 50%)".
func metricsText(h *autoscalingv2.HorizontalPodAutoscaler) string {
	var out []string
	for _, m := range h.Status.CurrentMetrics {
		if m.Type != autoscalingv2.ResourceMetricSourceType || m.Resource == nil {
			continue
		}
		s := string(m.Resource.Name)
		if u := m.Resource.Current.AverageUtilization; u != nil {
			s += fmt.Sprintf(" %d%% of requests", *u)
		} else if v := m.Resource.Current.AverageValue; v != nil {
			s += " " + v.String()
		}
		for _, sm := range h.Spec.Metrics {
			if sm.Resource != nil && sm.Resource.Name == m.Resource.Name && sm.Resource.Target.AverageUtilization != nil {
				s += fmt.Sprintf(" (target %d%%)", *sm.Resource.Target.AverageUtilization)
			}
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}
