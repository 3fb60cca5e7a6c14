package envtest

import (
	"fmt"

	"k8s.io/client-go/rest"
)

// installWebhooks installs the webhooks of w in the cluster of cfg, as
// envtest's Environment does: w.Install prepares the serving certificate,
// host and port (unless prepared already), points each webhook's
// clientConfig at them, creates the configurations through cfg and waits
// until they are served. Nothing to install is nothing to do.
func installWebhooks(w *WebhookInstallOptions, cfg *rest.Config) error {
	if len(w.Paths) == 0 && len(w.MutatingWebhooks) == 0 && len(w.ValidatingWebhooks) == 0 {
		return nil
	}
	if err := w.Install(cfg); err != nil {
		return fmt.Errorf("envtest: webhooks: %w", err)
	}
	return nil
}
