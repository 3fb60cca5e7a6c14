package envtest

import (
	"errors"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
)

// The names suites take from controller-runtime's envtest, as aliases: a
// suite's envtest.WebhookInstallOptions{Paths: ...} compiles unchanged.
type (
	// WebhookInstallOptions are envtest's options for webhooks, as
	// [Environment] takes them.
	WebhookInstallOptions = crenvtest.WebhookInstallOptions
	// CRDInstallOptions are envtest's options for installing custom
	// resource definitions, as [Environment] takes them.
	CRDInstallOptions = crenvtest.CRDInstallOptions
	// ControlPlane is envtest's, for [Environment.ControlPlane].
	ControlPlane = crenvtest.ControlPlane
	// APIServer is envtest's.
	APIServer = crenvtest.APIServer
	// Etcd is envtest's.
	Etcd = crenvtest.Etcd
	// User is envtest's, for [Environment.AddUser].
	User = crenvtest.User
	// AuthenticatedUser is envtest's, for [Environment.AddUser].
	AuthenticatedUser = crenvtest.AuthenticatedUser
)

// AddUser is envtest's way to a client of another user, which the bench
// cannot give: it authenticates no one and authorizes every request.
func (e *Environment) AddUser(user User, _ *rest.Config) (*AuthenticatedUser, error) {
	return nil, errors.New("envtest: the bench has no authentication or authorization: AddUser (user " + user.Name + ") is not supported")
}

// InstallCRDs is envtest's InstallCRDs, for a suite that installs more
// CRDs once the Environment runs: it creates them through config's API
// and waits until they are served.
func InstallCRDs(config *rest.Config, options CRDInstallOptions) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	return crenvtest.InstallCRDs(config, options)
}

// UninstallCRDs is envtest's UninstallCRDs: it deletes the CRDs of
// options through config's API.
func UninstallCRDs(config *rest.Config, options CRDInstallOptions) error {
	return crenvtest.UninstallCRDs(config, options)
}
